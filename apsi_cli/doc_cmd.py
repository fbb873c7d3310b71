"""`apsi doc NAME`: what help(NAME) shows in a program, from a shell (apsi_lang/help.py)."""

import click


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("name", required=False)
def doc(name):
    """Show what NAME is: a builtin (print), a module (nn, layers) or a function (fit, dense)."""
    from apsi_lang import help as apsi_help

    text = apsi_help.text(name)
    click.echo(text)
    if name is not None and text.startswith("help: no documentation"):
        raise SystemExit(1)
