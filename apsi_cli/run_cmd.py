"""`apsi run [PERMISSIONS] FILE [ARGS]...`"""

import click

from . import options


@click.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False,
                                 "help_option_names": ["-h", "--help"]})
@options.permission_options
@click.argument("file", type=click.Path(dir_okay=False))
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@click.pass_context
def run(ctx, file, args, **perms):
    """Run an Apsi program; ARGS reach it as the list `args`."""
    from . import runner

    outer = (ctx.parent.obj or {}).get("perms", {}) if ctx.parent else {}
    ctx.exit(runner.run_file(file, list(args), options.merge(outer, perms)))
