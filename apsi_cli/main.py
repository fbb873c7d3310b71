"""The root `apsi` command.

    apsi [PERMISSIONS] FILE [ARGS…]      run a program (same as `apsi run`)
    apsi [PERMISSIONS] -e CODE           run a snippet; top-level values are shown
    apsi [PERMISSIONS]                   start the REPL (piped input runs as a program; -i forces the REPL)
    apsi [PERMISSIONS] - [ARGS…]         run the program read from standard input
    apsi check FILE…                     compile without running (for editors and CI)
    apsi check-torch [--device cpu]      every layer on NumPy and PyTorch, compared in float64
    apsi trust [PATH] [--yes]            trust an apsi.toml (until then it grants nothing)
    apsi doc NAME                        what help(NAME) shows: apsi doc fit, apsi doc nn
    apsi kernel install [--user] [PERMISSIONS]   the Jupyter kernelspec (notebooks keep the sandbox)
    apsi lsp                             the language server for editors (stdio)
    apsi run|pkg|doctor|setup …          subcommands, imported only when used
"""

# No Click here: this module is what the console script imports, and the common command lines
# (apsi FILE, apsi run FILE, apsi -e CODE) never need it (apsi_cli/fast.py). The Click group lives
# in apsi_cli/group.py and is imported only for everything else.

from .commands import LAZY_COMMANDS  # noqa: F401  (main's name, as before)


def __getattr__(name):
    """`from apsi_cli.main import cli` still gives the Click group (tests, embedders)."""
    if name in ("cli", "ApsiGroup"):
        from . import group

        return getattr(group, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _quiet_blas_threads():
    """OpenBLAS's idle threads spin for 2**28 cycles (about 0.1 s) after every call before they sleep,
    taking a core from the work between two GEMMs: NumPy's own loops and the fused ops' batch threads
    (apsi_layers/nn/fused/batch_threads.py); a CNN's step spent a third of its samples there. 2**20
    cycles (a few hundred microseconds) still covers the short gaps between an MLP's GEMMs, where
    waking a sleeping thread would cost more (2**16 made the MLP fit 7% slower). OpenBLAS reads this
    when NumPy loads it, so it is set before anything imports NumPy; a value the user set wins."""
    import os

    os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "20")


def main(argv=None, prog_name="apsi"):
    import sys

    argv = list(sys.argv[1:] if argv is None else argv)
    _quiet_blas_threads()
    from apsi_lang import signals

    signals.install()       # SIGTERM stops as Ctrl-C does: cleanups run, exit 143
    try:
        from . import fast

        quick = fast.dispatch(argv, prog_name)     # None: the command line needs Click
        if quick is not None:
            sys.exit(fast.run(quick))
        from . import group, options

        group.cli.main(args=options.normalize_argv(argv), prog_name=prog_name)
    except SystemExit as e:
        if e.code in (130, 143):        # interrupted: the process only exits now
            signals.ignore_while_exiting()
        raise
    except Exception as e:      # a bug in a command: say so plainly; the traceback only on request
        import os

        if os.environ.get("APSI_DEBUG", "") not in ("", "0"):
            raise
        sys.stdout.flush()
        sys.stderr.write(f"apsi: internal error: {type(e).__name__}: {e}\n"
                         "This is a bug in Apsi. Run again with APSI_DEBUG=1 to see the Python traceback, "
                         "and please report it.\n")
        sys.stderr.flush()
        sys.exit(1)
