"""The kernel wall (the sandbox's second wall, under the language's checks): confine.py decides what a
program may touch and applies it; landlock.py (files, TCP ports) and seccomp.py (sockets) are the Linux
system interfaces it uses."""
