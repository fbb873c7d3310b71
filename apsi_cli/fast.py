"""The common command lines without Click: `apsi [PERMS] FILE [ARGS]`, `apsi [PERMS] run [PERMS] FILE
[ARGS]` and `apsi [PERMS] -e CODE [ARGS]`.

Importing Click costs about as much as starting Python itself, and these lines are what users type
most. `dispatch` accepts only command lines it understands completely (the permission flags exactly as
Click spells them, a file, then the program's arguments) and returns None for anything else (--help,
--version, -i, a subcommand, an unknown or malformed flag, a file Click would refuse), which then goes
through the Click group unchanged, so help, errors and every other behaviour stay Click's.
"""

import errno
import os
import sys

from .perm_flags import BOOL_FLAGS, PERM_KEYS, SCOPED_FLAGS


def _perm_flag(arg, perms):
    """Record `arg` in perms and return True if it is a permission flag; False otherwise."""
    if arg in BOOL_FLAGS:
        perms[BOOL_FLAGS[arg]] = True
        return True
    flag, eq, value = arg.partition("=")
    if flag in SCOPED_FLAGS:
        perms[SCOPED_FLAGS[flag]] = value if eq else "*"     # bare means "all", as normalize_argv says
        return True
    return False


def _perms(argv, i):
    """Permission flags from argv[i:]: (perms with every key, index of the first other argument)."""
    perms = dict.fromkeys(PERM_KEYS)
    while i < len(argv) and _perm_flag(argv[i], perms):
        i += 1
    return perms, i


def _click_would_refuse(path):
    """`apsi run`'s FILE is a click.Path(dir_okay=False): a folder or an unreadable file is Click's
    usage error, so those go through Click to keep its message."""
    return path != "-" and os.path.exists(path) and (os.path.isdir(path) or not os.access(path, os.R_OK))


def dispatch(argv, prog_name="apsi"):
    """A zero-argument function that runs the command line and returns the exit code, or None."""
    from .commands import LAZY_COMMANDS

    if f"_{prog_name}_COMPLETE".replace("-", "_").upper() in os.environ:
        return None                         # Click's shell completion
    outer, i = _perms(argv, 0)
    if i >= len(argv):
        return None                         # the REPL or standard input
    head = argv[i]
    if head == "-e":
        if i + 1 >= len(argv) or argv[i + 1].startswith("-"):
            return None
        code, args = argv[i + 1], argv[i + 2:]
        return lambda: _runner().run_code(code, outer, args=args)
    if head == "run":
        inner, i = _perms(argv, i + 1)
        if i >= len(argv):
            return None
        head = argv[i]
        perms = _merge(outer, inner)
    elif head in LAZY_COMMANDS:
        return None
    else:
        perms = _merge(outer, dict.fromkeys(PERM_KEYS))
    if (head.startswith("-") and head != "-") or _click_would_refuse(head):
        return None
    args = argv[i + 1:]
    # `apsi --allow-env HOME prog.apsi`: the bare flag means all, and HOME became the program, which
    # does not exist; its message says so (a file that exists runs as Click would run it)
    hint = ({"after_flag": argv[i - 1]} if i > 0 and argv[i - 1] in SCOPED_FLAGS and head != "-"
            and not os.path.exists(head) else {})
    return lambda: _runner().run_file(head, args, perms, **hint)


def _merge(outer, inner):
    """Flags given to `apsi` and to `apsi run` both count (options.merge, without importing Click)."""
    merged = dict(outer)
    merged.update((k, v) for k, v in inner.items() if v is not None)
    return merged


def _runner():
    from . import runner

    return runner


def run(action):
    """action() with what Click's standalone mode does around a command, but the exit codes a shell
    expects: Ctrl-C (outside the program, which the runner handles itself) exits 130, SIGTERM 143;
    end of input says Aborted! and exits 1; a closed pipe exits 1 quietly."""
    try:
        return action()
    except KeyboardInterrupt as e:
        from apsi_lang import signals

        sys.stderr.write(f"\napsi: {signals.describe(e)}\n")
        return signals.exit_code(e)
    except EOFError:
        sys.stderr.write("\nAborted!\n")
        return 1
    except OSError as e:
        if e.errno != errno.EPIPE:
            raise
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())   # nothing more to flush there
        return 1
