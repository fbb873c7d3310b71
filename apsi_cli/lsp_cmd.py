"""`apsi lsp`: the language server on standard input and output, for editors."""

import click


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--stdio", is_flag=True, help="Talk over standard input/output (the default; editors pass it).")
def lsp(stdio):
    """Start the language server (diagnostics, hover, completion, definitions, symbols)."""
    try:
        from .lsp.server import main
    except ImportError as e:
        from .extras import install_command

        raise click.ClickException(f"the language server needs pygls and lsprotocol ({e}): "
                                   f"{install_command('lsp')}") from None
    main()
