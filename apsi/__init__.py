"""`python -m apsi …` runs the apsi command with this Python (see apsi/__main__.py)."""
