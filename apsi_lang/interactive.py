"""Whether a person is at the keyboard (the REPL): long operations then return what they have on
Ctrl-C (fit's partial result) instead of losing it with the interrupted statement."""

_active = False


def active():
    return _active


def set_active(value):
    global _active
    _active = bool(value)
