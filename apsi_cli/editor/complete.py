"""What completion offers at a cursor, for the kernel (with the running program's values) and the
language server (from the source alone): names, module exports, a value's fields, a call's options."""

import re
from pathlib import Path

from apsi_lang.builtins import BUILTINS
from apsi_lang.lexer import KEYWORDS

# Options taken through **options, which a signature cannot show: (module path, tuple name)
CALL_OPTIONS = {"fit": ("apsi_layers.layers.training.plan", "FIT_OPTIONS"),
                "predict": ("apsi_layers.layers.training.plan", "PREDICT_OPTIONS")}
_USE = re.compile(r"^\s*use\s+(\w*)$")


def module_names(folder):
    """Installed modules and the NAME.apsi files beside the program."""
    from apsi_lang import modules

    found = set(modules.available())
    try:
        found |= {p.stem for p in Path(folder).glob("*.apsi") if p.stem.isidentifier()}
    except OSError:
        pass
    return sorted(found)


def module_exports(name, folder, quiet=True):
    """{name: value} module `name` exports (None for an Apsi file's, which is only compiled); {} when
    it cannot be found or compiled, or (quiet=False) the ApsiError or ApsiSyntaxError saying why."""
    from apsi_lang import modules
    from apsi_lang.errors import ApsiError, ApsiSyntaxError

    try:
        if modules._entry_point(name) is not None:
            return dict(modules.load(name, folder))
        return dict.fromkeys(modules.names(name, folder))
    except (ApsiError, ApsiSyntaxError, OSError):
        if not quiet:
            raise
        return {}


def attributes(value):
    """The names Apsi code may read on `value` (a record's fields, an allow-listed type's names)."""
    from apsi_lang import sandbox
    from apsi_lang.values import Record

    if type(value) is Record:
        return set(vars(value))
    return set(sandbox.allowed_attrs(type(value)) or ())


def keyword_options(fn, name):
    """The keyword arguments a call of `fn` (called `name` in the source) may name."""
    import inspect

    found = set()
    try:
        sig = inspect.signature(fn)
        found = {p.name for p in sig.parameters.values()
                 if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and not p.name.startswith("_")}
    except (TypeError, ValueError):
        pass
    if name in CALL_OPTIONS and getattr(fn, "__module__", "").startswith("apsi_layers"):
        import importlib

        module, attr = CALL_OPTIONS[name]
        found |= set(getattr(importlib.import_module(module), attr, ()))
    return found


def open_call(before):
    """The name of the function whose call's '(' is still open in `before` (text up to the cursor)."""
    depth = 0
    for i in range(len(before) - 1, -1, -1):
        c = before[i]
        if c in ")]}":
            depth += 1
        elif c in "([{":
            if depth == 0:
                if c != "(":
                    return None
                m = re.search(r"([^\W\d]\w*)\s*$", before[:i])
                return m.group(1) if m else None
            depth -= 1
    return None


def candidates(lines, line, col, folder, namespace=None, outline=None, exports=None):
    """[(label, kind)] for the cursor at 0-based (line, col); kind: keyword, function, variable,
    module, field or option. `namespace` is the running program's (the kernel), else None;
    `exports(module)` gives a module's {name: value or None} (default: loaded here)."""
    from .outline import prefix_at

    namespace = namespace or {}
    exports = exports or (lambda module: module_exports(module, folder))
    before = lines[line][:col] if 0 <= line < len(lines) else ""
    m = _USE.match(before)
    if m:
        return _starting(((n, "module") for n in module_names(folder)), m.group(1))
    qualifier, prefix = prefix_at(lines, line, col)
    if qualifier is not None:
        return _starting(_members(qualifier, namespace, outline, exports), prefix)
    found = [(k, "keyword") for k in sorted(KEYWORDS)]
    found += [(n, _kind(v)) for n, v in sorted(BUILTINS.items())]
    found += [(n, _kind(v)) for n, v in namespace.items() if not n.startswith("_") and n != "args"]
    if outline is not None:
        found += [(d.name, "function" if d.kind == "function" else "variable")
                  for d in outline.all_definitions()]
        for name, alias, _ in outline.uses():
            if alias is None and name not in namespace:
                found += [(n, _kind(v)) for n, v in exports(name).items()]
    call = open_call(before)
    if call is not None:
        fn = namespace.get(call, BUILTINS.get(call)) or _exported(call, outline, exports)
        if callable(fn):
            found = [(o + "=", "option") for o in sorted(keyword_options(fn, call))] + found
    return _starting(found, prefix)


def _exported(name, outline, exports):
    """The value of `name` from a module the source uses (for its call's options), or None."""
    for module, alias, _ in outline.uses() if outline is not None else ():
        if alias is None:
            value = exports(module).get(name)
            if value is not None:
                return value
    return None


def _members(qualifier, namespace, outline, exports):
    if qualifier in namespace:
        return [(n, "field") for n in sorted(attributes(namespace[qualifier]))]
    for module, alias, _ in outline.uses() if outline is not None else ():
        if alias == qualifier:
            return [(n, _kind(v)) for n, v in sorted(exports(module).items())]
    return []


def _kind(value):
    return "function" if value is None or callable(value) else "variable"


def _starting(pairs, prefix):
    seen, out = set(), []
    for label, kind in pairs:
        if label.startswith(prefix) and label not in seen:
            seen.add(label)
            out.append((label, kind))
    return out
