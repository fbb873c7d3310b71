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
    if len(files) == 1:
        ctx.exit(runner.check_file(files[0], merged))
    # each file in its own process: the kernel's confinement is for one project folder, and a second
    # one stacked on the first would leave the second file's folder unreadable
    for file in files:
        code = _check_in_child(file, merged)
        if code:
            ctx.exit(code)
    ctx.exit(0)


def _check_in_child(file, perms):
    import subprocess
    import sys

    args = [sys.executable, "-m", "apsi", "check", *options.to_args(perms), "--", file]
    return subprocess.run(args).returncode
