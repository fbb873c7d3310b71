"""`apsi check FILE…`: compile programs without running them, for editors and CI.

Each file is parsed and compiled as `apsi FILE` would (its `use` lines are resolved, so a misspelt
module or name is caught), and nothing runs. Exit 0 when all compile; 2 at the first error.
"""


import click

from . import options


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@options.permission_options
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.pass_context
def check(ctx, files, **perms):
    """Compile FILES without running them; exit 2 at the first syntax or name error."""
    from . import runner

    outer = (ctx.parent.obj or {}).get("perms", {}) if ctx.parent else {}
    merged = options.merge(outer, perms)
    for file in files:
        code = runner.check_file(file, merged)
        if code:
            ctx.exit(code)
    ctx.exit(0)
