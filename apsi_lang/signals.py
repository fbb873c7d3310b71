"""Ctrl-C and SIGTERM as exceptions, and the exit codes a shell expects (130 and 143).

SIGTERM's default action ends the process on the spot: an atomic write in progress left its large
temporary file in the project and nothing was printed. Raised as an exception instead (a kind of
KeyboardInterrupt, so every path that stops cleanly on Ctrl-C also stops cleanly on SIGTERM), the
program's `finally` blocks run and the command says what happened.
"""

import signal


class Terminated(KeyboardInterrupt):
    """The process was asked to stop (SIGTERM)."""


def install():
    """Turn SIGTERM into Terminated (on the main thread, where Python runs signal handlers)."""
    try:
        signal.signal(signal.SIGTERM, _raise_terminated)
    except (ValueError, OSError):       # not the main thread, or no such signal here
        pass


def _raise_terminated(signum, frame):
    raise Terminated()


def ignore_while_exiting():
    """After an interrupt has been reported, more Ctrl-C or SIGTERM are ignored at the OS level once the
    interpreter shuts down: its shutdown puts Python's own handlers back to the default action, and a
    second Ctrl-C arriving then killed the process by SIGINT instead of letting it exit 130. (Python
    leaves an ignored signal ignored.) At exit, not now: a caller that goes on in this process (a test
    calling main()) must not start children that inherit an ignored SIGINT."""
    import atexit

    atexit.register(ignore_now)


def ignore_now():
    """Ignore Ctrl-C and SIGTERM from here on (a process that is already on its way out)."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            signal.signal(sig, signal.SIG_IGN)
        except (ValueError, OSError):
            pass


def exit_code(error):
    return 143 if isinstance(error, Terminated) else 130


def describe(error):
    return "terminated (SIGTERM)" if isinstance(error, Terminated) else "interrupted (Ctrl-C)"
