"""What the Jupyter kernel and the language server share: help texts, names for completion, definitions
and symbols from the real parser, and diagnostics from the real compiler. Nothing here runs a program."""
