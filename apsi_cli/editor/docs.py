"""The help text of a name, for the kernel's inspect and the language server's hover.

One function, `help_text`, so both front ends read the same words: what help(NAME) shows for a
documented builtin or module function (apsi_lang/help.py, from the one documentation source), else
what the runtime knows (a function's signature, a record's fields, the keywords below)."""

import inspect

from apsi_lang.builtins import BUILTINS
from apsi_lang.values import Record, show, type_name

KEYWORDS = {
    "let": "let NAME = VALUE: declare a variable (let a, b = 1, 2 destructures).",
    "fn": "fn NAME(PARAMS): BODY — define a function; fn(x) => x * 2 is a function value.",
    "use": "use NAME: load a module (nn, layers, plot, units, web, or NAME.apsi beside the program); "
           "use NAME as N puts its names in the record N.",
    "for": "for NAME in VALUES: BODY — loop over a list, range, map, tensor, …",
    "while": "while TEST: BODY — loop while TEST is true.",
    "if": "if TEST: BODY, elif TEST: BODY, else: BODY.",
    "try": "try: BODY catch e: HANDLER finally: CLEANUP — e.message is the error's text.",
    "return": "return VALUE: leave the function with VALUE (none without one).",
    "assert": "assert TEST, MESSAGE: stop with an error when TEST is false.",
}
_NO_VALUE = object()


def help_text(name, value=_NO_VALUE):
    """Markdown-free plain text about `name`: what it is, how it is called, what it does. `value` is
    the name's value where a running program has one (the kernel); else builtins and keywords."""
    documented = _documented(name, value)
    if documented is not None:
        return documented
    if value is _NO_VALUE:
        if name in KEYWORDS:
            return KEYWORDS[name]
        if name not in BUILTINS:
            return None
        value = BUILTINS[name]
    return describe_value(name, value)


def _documented(name, value):
    """What help(NAME) shows (apsi_lang/help.py, the one documentation source), for a builtin or a
    module's function, when `value` is that function (not the program's own value of that name)."""
    from apsi_lang import doc_source
    from apsi_lang import help as apsi_help

    base = name.rsplit(".", 1)[-1]
    ours = value is _NO_VALUE or (callable(value) and getattr(value, "__name__", None) == base)
    if not ours or not doc_source.lookup(base):
        return None
    return apsi_help.text(base, None if value is _NO_VALUE else value)


def describe_value(name, value):
    if type(value) is Record:
        fields = ", ".join(vars(value)) or "none"
        return f"{name}: a record with fields {fields}"
    if callable(value) and not isinstance(value, type):
        head = f"{name}{signature(value)}"
        doc = inspect.getdoc(value)
        return head + ("\n\n" + doc if doc else "")
    text = show(value, quoted=True)
    if len(text) > 300:
        text = text[:300] + "…"
    return f"{name}: {kind_of(value)} = {text}"


def kind_of(value):
    """What the inferred kind of a value is called in messages: int, str, fn, record, tensor, …"""
    try:
        return type_name(value)
    except Exception:               # a module's own object: its Python type's name is the best we have
        return type(value).__name__


def signature(fn):
    """`(x, y=1, *, seed=none)` in Apsi's spelling of Python defaults, or `(…)` when unknown."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return "(…)"
    parts = []
    for p in sig.parameters.values():
        text = p.name.removeprefix("_kw_")
        if p.kind is p.VAR_POSITIONAL:
            text = "*" + text
        elif p.kind is p.VAR_KEYWORD:
            text = "**" + text
        if p.default is not p.empty:
            text += "=" + show(p.default, quoted=True)
        parts.append(text)
    return "(" + ", ".join(parts) + ")"


def arity(fn):
    """(fewest, most or None) positional arguments `fn` takes, or None when that cannot be known."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    low, high = 0, 0
    for p in sig.parameters.values():
        if p.kind is p.VAR_POSITIONAL:
            high = None
        elif p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            if p.default is p.empty:
                low += 1
            if high is not None:
                high += 1
    return low, high
