"""Python's spellings of functions, classes, modules and addresses in a message, rewritten as Apsi
shows them. Here, not in values.py, because errors.py cleans every message with it and values.py raises
errors: both import this file, which imports neither."""

_PY_TEXT = None


def no_address(text):
    """`text` as Apsi shows it: no memory address (` at 0x7f…`) and none of Python's spellings of
    functions, methods, classes and modules (`<function f at 0x…>`, `<class 'int'>`), which messages
    of Python code may hold (`got {x!r}`): functions read `<fn f>` as print shows them."""
    if "0x" not in text and "<" not in text:
        return text
    if _PY_TEXT is None:
        _compile_py_text()
    if "<" in text:
        for pattern, words in _PY_TEXT:
            text = pattern.sub(words, text)
    return _ADDRESS.sub("", text) if "0x" in text else text


def _compile_py_text():
    global _PY_TEXT, _ADDRESS
    import re

    def fn(m):
        return f"<fn {m.group(1).rsplit('.', 1)[-1]}>"

    inner = r"[^<>]*(?:<[^<>]*>[^<>]*)*"     # an object's own text, with one level of <…> inside
    _PY_TEXT = [
        (re.compile(r"<(?:built-in )?function ((?:[\w.]|<\w+>)+)(?: at 0x[0-9a-fA-F]+)?>"), fn),
        (re.compile(r"<(?:bound |built-in )?method ((?:[\w.]|<\w+>)+) of " + inner + ">"), fn),
        (re.compile(r"<(?:method|slot wrapper|method-wrapper|classmethod|staticmethod) '(\w+)' of "
                    + inner + ">"), fn),
        (re.compile(r"<class '([\w.]+)'>"), lambda m: type_word(m.group(1).rsplit(".", 1)[-1])),
        (re.compile(r"<module '([\w.]+)'" + inner + ">"), lambda m: f"<module {m.group(1)}>"),
        (re.compile(r"<(\w+) object at 0x[0-9a-fA-F]+>"), lambda m: f"<{m.group(1)} object>"),
    ]
    _ADDRESS = re.compile(r"( at)? 0x[0-9a-fA-F]{6,}")


def type_word(py_name):
    """Apsi's word for a Python type named in a message ('NoneType' is none, 'dict' a map)."""
    return {"NoneType": "none", "Record": "record", "SimpleNamespace": "record", "dict": "map",
            "builtin_function_or_method": "function", "method": "function",
            "frozenset": "set"}.get(py_name, py_name)


_ADDRESS = None
