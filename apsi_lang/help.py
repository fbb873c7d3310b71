"""`help(NAME)` in programs and the REPL, `apsi doc NAME`, and the signature a function shows when it
is a top-level value (`fit` typed alone). The text comes from the one documentation source
(doc_source.py) and the function's own parameters; nothing of Python's (docstrings, classes) is shown.
"""


from . import doc_source
from .values import show

WIDTH = 100
_BUILTINS = {}          # Apsi's builtins table, given by builtins.py (which imports this module)


def know_builtins(table):
    """builtins.py hands over its table: help shows a builtin's parameters from the function."""
    _BUILTINS.update(table)


def apsi_help(topic=None):
    """help(fit), help(dense), help(nn), help("nn"), help(): prints what it is and how to use it."""
    import sys

    sys.stdout.write(text(topic) + "\n")


def text(topic=None, value=None):
    """The help text for `topic`: a name (a string) or a value (a function, a layer)."""
    if topic is None:
        return _overview()
    name = topic if isinstance(topic, str) else _name_of(topic)
    if value is None and not isinstance(topic, str):
        value = topic
    if name is None:
        return (f"help: no documentation for {_what(topic)}; help(NAME) documents a builtin, a module "
                "(nn, layers, …) or one of its functions")
    src = doc_source.module_source(name)
    if src is not None:
        return _module_text(src)
    entries = doc_source.lookup(name)
    if not entries:
        import difflib

        close = difflib.get_close_matches(name, doc_source.documented_names(), n=3)
        meant = f" (did you mean {', '.join(close)}?)" if close else ""
        return f"help: no documentation for '{name}'{meant}; help() lists where to look"
    return "\n\n".join(_entry_text(e, value) for e in entries)


def _what(value):
    from .values import a_type

    return a_type(value)


def _name_of(value):
    if getattr(type(value), "__apsi_type__", None) == "layer":
        return getattr(value, "kind", None)
    name = getattr(value, "__name__", None)
    if not (isinstance(name, str) and callable(value)):
        return None
    return name if doc_source.lookup(name) else _exported_as(value) or name


def _exported_as(fn):
    """The name a loaded module exports `fn` by, where its Python name differs (`dropout` is
    dropout_layer); only modules already loaded: a value in hand came from one of them."""
    from .modules import loaded

    return next((name for exports in loaded() for name, value in exports.items() if value is fn), None)


def _overview():
    mods = [s.module for s in doc_source.sources() if s.module]
    return ("help(NAME) shows what NAME is, its options with their defaults and an example: a builtin "
            f"(help(print)), a module ({', '.join(f'help({m})' for m in mods)}) or one of its "
            "functions (help(fit), help(dense)); from a shell, `apsi doc NAME` shows the same")


def _module_text(src):
    names = []
    for table in src.tables:
        if table.options_of is None:
            names += [n for row in table.rows for n in doc_source.names_in(row[0])]
    exported = _exports(src.module)
    if exported is not None:                # (a table's row may name a value, `true`, or a dtype)
        names = [n for n in names if n in exported]
    listed = ", ".join(dict.fromkeys(names))
    return "\n".join([f"use {src.module}", _wrap(src.paragraph), "", "documented names:",
                      _wrap(listed, "  "), "", f"help(NAME) for one of them, e.g. help({names[0]})"
                      if names else ""]).rstrip()


def _entry_text(entry, value):
    fn = _value_of(entry) or (value if callable(value) else None)
    head = signature(fn, entry.name) if fn is not None else None
    lines = [(head or doc_source.plain(entry.rows[0][1][0] if entry.rows else entry.name))
             + (f"    (use {entry.module})" if entry.module else "")]
    if entry.paragraph:
        lines.append(_wrap(doc_source.plain(entry.paragraph)))
    for table, row in entry.rows:
        lines.append(_wrap(_paragraph(table, row)))
    options = _options(entry, fn)
    if options:
        lines += ["", "options (default):"] + options
    if entry.example:
        lines += ["", "example:"] + ["  " + ln for ln in entry.example.splitlines()]
    return "\n".join(lines)


def _paragraph(table, row):
    """A row's cells after the first, as one paragraph (labelled where the table has several)."""
    rest = [(h, c) for h, c in zip(table.header[1:], row[1:], strict=False) if c]
    if table.kind == "builtin" or len(rest) <= 1:
        words = " ".join(c for _, c in rest)
        return doc_source.plain(f"{row[0]}: {words}" if words else row[0])
    return doc_source.plain(row[0] + ": " + "; ".join(f"{h.lower()}: {c}" for h, c in rest))


def _options(entry, fn):
    if entry.options:
        return [_wrap(doc_source.plain(f"{row[0]} = {row[1] or '—'}: {row[2]}"), "  ", "      ")
                for _, row in entry.options]
    if fn is None:
        return []
    import inspect  # only when help is asked for: with dataclasses, a tenth of start-up's instructions

    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return []
    return [f"  {p.name} = {_default(p.default)}" for p in params if p.default is not inspect.Parameter.empty]


def _value_of(entry):
    """The documented function itself, for its parameters: a builtin, or the module's export."""
    if not entry.module:
        return _BUILTINS.get(entry.name)
    return (_exports(entry.module) or {}).get(entry.name)


def _exports(module):
    """A module's exports (loading it, as `use` would), or None where it does not load."""
    from .modules import load

    try:
        return load(module, ".")
    except Exception:
        return None


def signature(fn, name=None):
    """`fit(model, params, inputs, targets=none, **options)`: Apsi's spelling of the parameters."""
    import inspect

    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    parts = []
    for p in params:
        if p.kind is p.VAR_POSITIONAL:
            parts.append(f"*{p.name}")
        elif p.kind is p.VAR_KEYWORD:
            parts.append(f"**{p.name}")
        elif p.default is inspect.Parameter.empty:
            parts.append(p.name)
        else:
            parts.append(f"{p.name}={_default(p.default)}")
    return f"{name or fn.__name__}({', '.join(parts)})"


def _default(value):
    if isinstance(value, tuple):
        value = list(value)
    return show(value, True)


def shown_function(fn):
    """How a function shows as a top-level value: its signature, and help's hint where it is
    documented; None for a lambda or what has no signature (it shows as <fn NAME>)."""
    name = getattr(fn, "__name__", None)
    if isinstance(name, str) and name.isidentifier():
        name = _name_of(fn)
    line = signature(fn, name) if isinstance(name, str) and name.isidentifier() else None
    if line is None:
        return None
    return f"<fn {line}>" + (f"  help({name}) tells more" if doc_source.lookup(name) else "")


def _wrap(text, first="", rest=None):
    import textwrap

    return textwrap.fill(text, WIDTH, initial_indent=first, subsequent_indent=rest or first,
                         break_on_hyphens=False, break_long_words=False)
