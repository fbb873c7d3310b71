"""The Click side of the root `apsi` command: the group, its options and the lazy subcommands.

Imported only when a command line needs Click (subcommands, --help, --version, the REPL, errors);
`apsi FILE`, `apsi run FILE` and `apsi -e CODE` are dispatched by apsi_cli/fast.py without it."""

import importlib

import click

from . import options
from .commands import LAZY_COMMANDS


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

    def parse_args(self, ctx, args):
        try:
            return super().parse_args(ctx, args)
        except click.NoSuchOption as e:
            if e.option_name == "-c":           # Python's spelling
                raise click.UsageError("No such option '-c': Apsi runs a snippet with -e CODE, as in "
                                       "apsi -e 'print(1)'", ctx) from None
            raise

    def invoke(self, ctx):
        # Click's own handling says "Aborted!" and exits 1; a shell expects 130 (Ctrl-C) / 143 (SIGTERM)
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt as e:
            from apsi_lang import signals

            click.echo(f"\napsi: {signals.describe(e)}", err=True)
            raise click.exceptions.Exit(signals.exit_code(e)) from None

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
    if interactive and ctx.invoked_subcommand == "run":
        # `python -i prog.py` runs the program, then the REPL; here -i was silently ignored
        raise click.UsageError("-i starts the REPL and runs no program: run the program without -i, or "
                               "start `apsi` in its folder and `use NAME` (its file name without .apsi) "
                               "to run it and have its top-level names at the prompt", ctx)
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
