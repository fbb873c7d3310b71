"""`apsi lsp`: the language server (stdio), with pygls and lsprotocol (the `lsp` extra)."""
