"""Messages for a name that is not one of the valid ones: list them and suggest the closest."""

import difflib


def unknown(what, value, valid):
    names = list(valid)
    message = f"unknown {what} {value!r}; valid: {', '.join(names)}"
    close = difflib.get_close_matches(str(value), names, n=1) if isinstance(value, str) else []
    if close:
        message += f" (did you mean {close[0]!r}?)"
    return message
