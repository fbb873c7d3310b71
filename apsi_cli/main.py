"""The root `apsi` command.

    apsi [PERMISSIONS] FILE [ARGS…]      run a program (same as `apsi run`)
    apsi [PERMISSIONS] -e CODE           run a snippet; top-level values are shown
    apsi [PERMISSIONS]                   start the REPL (piped input runs as a program; -i forces the REPL)
    apsi [PERMISSIONS] - [ARGS…]         run the program read from standard input
    apsi check FILE…                     compile without running (for editors and CI)
    apsi check-torch [--device cpu]      every layer on NumPy and PyTorch, compared in float64
    apsi run|pkg|doctor|setup …          subcommands, imported only when used
"""

import importlib

import click

from . import options

# name -> "module:attribute"; imported on first use so start-up stays light.
LAZY_COMMANDS = {
    "run": ("apsi_cli.run_cmd:run", "Run an Apsi program: apsi run [PERMISSIONS] FILE [ARGS]..."),
    "check": ("apsi_cli.check_cmd:check", "Compile programs without running them (exit 2 on an error)."),
    "check-torch": ("apsi_cli.check_torch_cmd:check_torch",
                    "Compare every layer on NumPy and PyTorch in float64 (exit 1 on a difference)."),
    "pkg": ("apsi_cli.pkg:pkg", "Install, list and remove packages (PyTorch builds too)."),
    "doctor": ("apsi_cli.doctor:doctor", "Explain this machine's setup: Python, NumPy, PyTorch, GPUs."),
    "setup": ("apsi_cli.setup_wizard:setup", "The setup wizard: hardware, PyTorch build, apsi.toml."),
}


class ApsiGroup(click.Group):
    """A group whose first positional argument may be a program file instead of a subcommand."""

    def list_commands(self, ctx):
        return sorted(LAZY_COMMANDS)

    def get_command(self, ctx, name):
        if name not in LAZY_COMMANDS:
            return None
        module, attr = LAZY_COMMANDS[name][0].split(":")
        return getattr(importlib.import_module(module), attr)

    def resolve_command(self, ctx, args):
        if args and args[0] not in LAZY_COMMANDS:
            # `apsi train.apsi …` is `apsi run train.apsi …`
            return "run", self.get_command(ctx, "run"), args
        return super().resolve_command(ctx, args)

    def format_commands(self, ctx, formatter):
        rows = [(name, help_) for name, (_, help_) in sorted(LAZY_COMMANDS.items())]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def _version(ctx, _param, value):
    if not value or ctx.resilient_parsing:
        return
    from importlib.metadata import PackageNotFoundError, version

    try:
        v = version("apsi")
    except PackageNotFoundError:
        v = "0.1.0 (source)"
    click.echo(f"apsi {v}")
    ctx.exit()


@click.group(cls=ApsiGroup, invoke_without_command=True,
             context_settings={"help_option_names": ["-h", "--help"]})
@options.permission_options
@click.option("-e", "code", metavar="CODE",
              help="Run CODE; top-level values that are not none are shown. Arguments after CODE "
                   "reach it as `args`.")
@click.option("-i", "interactive", is_flag=True,
              help="Start the REPL even when standard input is not a terminal.")
@click.option("--program-arg", "program_args", multiple=True, hidden=True)
@click.option("--version", is_flag=True, callback=_version, expose_value=False, is_eager=True,
              help="Show Apsi's version and exit.")
@click.pass_context
def cli(ctx, code, interactive, program_args, **perms):
    """Apsi: a small scripting language for numeric and machine-learning work.

    \b
    apsi [PERMISSIONS] FILE [ARGS]...   run a program
    apsi [PERMISSIONS] -e CODE          run a snippet
    apsi [PERMISSIONS]                  start the REPL (-i when input is piped)
    apsi [PERMISSIONS] -                run the program on standard input
    apsi check FILE...                  compile without running
    """
    ctx.ensure_object(dict)
    ctx.obj["perms"] = perms
    if ctx.invoked_subcommand is not None:
        return
    from . import runner

    if code is not None:
        ctx.exit(runner.run_code(code, perms, args=list(program_args)))
    import sys

    if not interactive and not sys.stdin.isatty():
        # `printf 'print(1)\n' | apsi` runs the input as a program, as python does
        ctx.exit(runner.run_stdin([], perms))
    ctx.exit(runner.repl(perms))


def main(argv=None, prog_name="apsi"):
    import sys

    argv = options.normalize_argv(sys.argv[1:] if argv is None else argv)
    try:
        cli.main(args=argv, prog_name=prog_name)
    except Exception as e:      # a bug in a command: say so plainly; the traceback only on request
        import os

        if os.environ.get("APSI_DEBUG", "") not in ("", "0"):
            raise
        click.echo(f"apsi: internal error: {type(e).__name__}: {e}\n"
                   "This is a bug in Apsi. Run again with APSI_DEBUG=1 to see the Python traceback, "
                   "and please report it.", err=True)
        sys.exit(1)
