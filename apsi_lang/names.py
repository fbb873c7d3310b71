"""Apsi names as Python names and back: an Apsi name that is a Python keyword (`if`, `as`, `None`) gets
a name Apsi cannot spell. The compiler, the runtime and the error reports all read it."""

import keyword


def py_name(name):
    """Apsi names that are Python keywords get a name Apsi can't spell."""
    return f"_kw_{name}" if keyword.iskeyword(name) or name in ("None", "True", "False") else name


def apsi_name(py):
    return py[4:] if py.startswith("_kw_") else py
