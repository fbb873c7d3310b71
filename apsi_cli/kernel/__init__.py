"""The Jupyter kernel: `apsi kernel install` writes a kernelspec named `apsi`.

Two processes, so a notebook keeps the sandbox. The kernel process (kernel.py) speaks Jupyter's
protocol with ipykernel; it runs no Apsi code. Cells run in a worker process (worker.py) that takes
its permissions exactly as `apsi run` does (the flags given at install time, the notebook folder's
trusted apsi.toml) and then confines itself with the kernel wall (apsi_cli/sandbox/confine.py). The wall
refuses sockets and most files, which ZeroMQ needs, so it could not go up in the kernel process
itself; the worker talks to it over two pipes (protocol.py), opened before the wall.
"""

NAME = "apsi"
