"""`apsi lsp`: the language server (stdio), with pygls and lsprotocol (pip install 'apsi[lsp]')."""
