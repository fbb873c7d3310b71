"""Running one action the command line's way: Apsi-style errors and exit codes, no Python traceback
unless APSI_DEBUG=1, Ctrl-C and broken pipes handled. The runner (files, -e, stdin) and the REPL both
run their code through guarded(); here, so neither imports the other.

Exit codes: 0 ok, 1 runtime error, 2 syntax/usage/config error, 130 interrupted.
"""

import os
import sys

from apsi_lang.errors import ApsiSyntaxError, ConfigError


class FlagError(Exception):
    """A permission flag that cannot mean what its user meant (exit 2)."""


def debug():
    return os.environ.get("APSI_DEBUG", "") not in ("", "0")


def _err(text):
    sys.stdout.flush()
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def guarded(action, prepare=None, note=None):
    """Run `prepare()` here, on the main thread (the grants and the confinement), then `action()`;
    report any failure the Apsi way and return an exit code. `note(error)`: a line to add to a
    runtime error's report, or None."""
    code = _guarded(action, prepare, note)
    leave_group(code)
    return code


def _guarded(action, prepare, note):
    from apsi_lang import bigstack, report

    from .arena import use_one_arena

    try:
        if prepare is not None:
            prepare()
        use_one_arena()             # before the program's thread allocates (apsi_cli/arena.py)
        bigstack.call(action)       # on a thread whose stack holds the recursion limit
        return 0
    except ApsiSyntaxError as e:
        _err(report.render_syntax_error(e))
        return 2
    except ConfigError as e:
        _err(f"apsi: error in apsi.toml: {e}")
        return 2
    except FlagError as e:
        _err(f"apsi: {e}")
        return 2
    except SystemExit as e:
        code = e.code
        if code is None or isinstance(code, int):
            return code or 0
        _err(str(code))            # exit("message"): the message goes to stderr, as in Python
        return 1
    except KeyboardInterrupt as e:
        from apsi_lang import files, signals

        _err(f"apsi: {signals.describe(e)}")
        # the interrupt may have come between a temporary file's creation and its cleanup
        files.remove_pending(final=bigstack.abandoned)
        if bigstack.abandoned:          # the program's thread is still inside C code: see bigstack
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(signals.exit_code(e))
        # more Ctrl-C stay ignored until the process exits (one during the exit killed it by SIGINT);
        # the REPL, which goes on, puts the handlers back itself
        return signals.exit_code(e)
    except BrokenPipeError:
        # the reader left (`apsi prog | head`): stop quietly, as a process killed by SIGPIPE would
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except BaseException as e:
        if debug():
            import traceback

            traceback.print_exception(e)
        extra = note(e) if note is not None else None
        _err(_rank_heading() + report.render_runtime_error(e) + (f"\n{extra}" if extra else ""))
        return 1
    finally:
        sys.stdout.flush()


def _rank_heading():
    """Under `apsi launch` (torchrun) every rank is an apsi process writing to the same terminal: an
    error says which rank failed (torchrun then stops the others)."""
    world = os.environ.get("WORLD_SIZE", "1")
    if world.isdigit() and int(world) > 1:
        return f"apsi: rank {os.environ.get('RANK', '?')} of {world} failed:\n"
    return ""


def leave_group(code):
    """A program whose fit joined torch.distributed's group ends here, flushing and leaving without the
    interpreter's exit (apsi_layers/distributed.py says why); otherwise nothing happens."""
    module = sys.modules.get("apsi_layers.distributed")
    if module is not None:
        module.exit_now(code)
