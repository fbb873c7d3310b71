"""What a user reads when a program fails: Apsi tracebacks and Apsi-level error texts.

Only frames of Apsi code appear (their code objects carry the Apsi file name); Python's own errors
are reworded in Apsi's terms (none, record, "an int is not a function").
"""

import re
import sys

from .compiler import apsi_name
from .errors import ApsiError, ApsiSyntaxError
from .values import Record, a_type

SOURCES = {}          # filename -> source lines, filled by the compiler's caller, for tracebacks


def apsi_frames(tb):
    """(filename, line, function) for the traceback frames that run Apsi code."""
    frames = []
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_filename in SOURCES:
            frames.append((code.co_filename, tb.tb_lineno, code.co_name))
        tb = tb.tb_next
    return frames


def unbound_message(name):
    return (f"'{name}' is used before it is assigned: give it a value (with 'let {name} = …' or "
            f"'fn {name}') on every path before this line")


def describe(exc):
    """The Apsi-level text for an exception raised while a program runs."""
    if isinstance(exc, ApsiError):
        return exc.message
    if isinstance(exc, ZeroDivisionError):
        return "division by zero"
    if isinstance(exc, NameError):      # UnboundLocalError too: a declared name not bound yet
        name = getattr(exc, "name", None) or (str(exc).split("'") + ["?", "?"])[1]
        return unbound_message(apsi_name(name))
    if isinstance(exc, RecursionError):
        return (f"too many nested calls (more than {sys.getrecursionlimit()}): "
                "check that the recursion reaches its base case")
    if isinstance(exc, AttributeError):
        obj, name = getattr(exc, "obj", None), getattr(exc, "name", None)
        if type(obj) is Record:
            return f"record has no field '{name}' (its fields: {', '.join(vars(obj)) or 'none'})"
        if name is not None:
            return f"{a_type(obj)} has no field or method '{name}'"
    if isinstance(exc, IndexError):
        return f"index out of range ({exc})"
    if isinstance(exc, KeyError):
        return f"no key {exc}"
    if isinstance(exc, TypeError):
        m = _NOT_CALLABLE.fullmatch(str(exc))
        if m:
            return f"{a_type_named(m.group(1))} is not a function: it cannot be called"
    if isinstance(exc, (TypeError, ValueError, OverflowError)):
        return _apsi_words(str(exc))
    if isinstance(exc, MemoryError):
        return "out of memory"
    return f"{type(exc).__name__}: {exc}"


_NOT_CALLABLE = re.compile(r"'(\w+)' object is not callable")


def a_type_named(name):
    name = {"NoneType": "none", "Record": "record", "builtin_function_or_method": "function"}.get(name, name)
    return "none" if name == "none" else ("an " if name[:1] in "aeiou" else "a ") + name


def _apsi_words(text):
    for py, apsi in (("'NoneType'", "none"), ("NoneType", "none"), ("'Record'", "record"),
                     ("builtin_function_or_method", "builtin function"), ("'function'", "function"),
                     ("None", "none"), ("True", "true"), ("False", "false")):
        text = text.replace(py, apsi)
    return text


def render_runtime_error(exc):
    """An Apsi traceback: Apsi frames only, each with file:line and its source line."""
    frames = apsi_frames(exc.__traceback__)
    out = []
    if len(frames) > 1:
        out.append("Traceback (most recent call last):")
    repeated = 0
    for i, (filename, line, func) in enumerate(frames):
        if i >= 3 and frames[i] == frames[i - 1] == frames[i - 2] == frames[i - 3]:
            repeated += 1           # deep recursion: show a frame three times, then count the rest
            continue
        if repeated:
            out.append(f"  [the frame above repeated {repeated} more times]")
            repeated = 0
        where = "at top level" if func == "<module>" else \
            ("in fn" if func == "<lambda>" else f"in fn {apsi_name(func)}")
        out.append(f"  {filename}:{line}, {where}")
        text = SOURCES.get(filename, [])
        if 0 < line <= len(text) and text[line - 1].strip():
            out.append(f"    {text[line - 1].strip()}")
    if repeated:
        out.append(f"  [the frame above repeated {repeated} more times]")
    loc = f"{frames[-1][0]}:{frames[-1][1]}: " if frames else ""
    out.append(f"{loc}error: {describe(exc)}")
    return "\n".join(out)


def render_syntax_error(exc: ApsiSyntaxError):
    return exc.render()
