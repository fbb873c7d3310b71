"""The Apsi functions inside a model (a lambda_layer's, activation(fn)'s, a schedule's) as stored source.

Each entry is {"kind", "name", "text", "captures"}: the function's own Apsi text (apsi_lang/fn_source.py)
and the values it reads from its program, by name: numbers, text, lists, records, small tensors, other
Apsi functions (entries of their own), or {"export": name} for a name `use nn`/`use layers` or a builtin
gives. Loading compiles each text again inside the sandbox, under no permissions (fn_source).
"""

from apsi_lang import fn_source
from apsi_lang.builtins import BUILTINS
from apsi_lang.errors import ApsiError
from apsi_lang.values import show

MODULES = ("nn", "layers")          # what a stored function's program `use`s


def standard_names():
    """{name: value} a stored function finds without capturing: builtins and nn's and layers' names."""
    from apsi_lang import modules

    found = dict(BUILTINS)
    for name in MODULES:
        found.update(modules.load(name, "."))
    return found


class FunctionTable:
    def __init__(self):
        self.entries, self.index, self.busy = [], {}, set()
        self.objects = []           # the functions themselves, by entry
        self._standard = None

    def add(self, fn, where, writer):
        if id(fn) in self.index:
            return self.index[id(fn)]
        if id(fn) in self.busy:
            raise ApsiError(f"save_model: {where}: its functions call each other in a cycle, which a model "
                            "file cannot store; give the layer one function that does the whole job")
        self.busy.add(id(fn))
        entry = fn_source.function_source(fn, f"save_model: {where}")
        if isinstance(fn, fn_source.StoredFunction):
            captures = dict(fn.entry.get("captures") or {})
        else:
            captures = {}
            standard = self.standard()
            by_id = {id(v): k for k, v in standard.items()}
            for name, value in fn_source.free_names(fn).items():
                if value is fn or standard.get(name, _MISSING) is value:
                    continue
                if id(value) in by_id and not isinstance(value, int | float | str | bool):
                    captures[name] = {"export": by_id[id(value)]}
                    continue
                captures[name] = writer.value(value, f"{where}: the value of {name!r} its function reads")
        entry["captures"] = captures
        self.busy.discard(id(fn))
        self.index[id(fn)] = len(self.entries)
        self.entries.append(entry)
        self.objects.append(fn)
        return self.index[id(fn)]

    def standard(self):
        if self._standard is None:
            self._standard = standard_names()
        return self._standard


_MISSING = object()


class FunctionReader:
    """Entries back to functions, compiled on first use (captured functions first)."""

    def __init__(self, shown, entries, program_dir):
        self.shown, self.entries, self.program_dir = shown, entries, program_dir
        self.done, self.busy = {}, set()
        self.reader = None          # the description.Reader, for captured values
        self._standard = None

    def get(self, i, where):
        if type(i) is not int or not 0 <= i < len(self.entries):
            raise ApsiError(f"load_model: {self.shown}: {where}: refers to function {show(i, True)}, which "
                            "the file does not have")
        if i in self.done:
            return self.done[i]
        if i in self.busy:
            raise ApsiError(f"load_model: {self.shown}: functions[{i}]: the functions refer to each other "
                            "in a cycle")
        self.busy.add(i)
        entry = self.entries[i]
        here = f"functions[{i}]"
        if type(entry) is not dict or type(entry.get("captures", {})) is not dict:
            raise ApsiError(f"load_model: {self.shown}: {here}: is not a stored function")
        values = {}
        for name, v in (entry.get("captures") or {}).items():
            if type(name) is not str or not name.isidentifier() or name.startswith("_"):
                raise ApsiError(f"load_model: {self.shown}: {here}: captures a value under the name "
                                f"{show(name, True)}, which is not a name")
            if type(v) is dict and set(v) == {"export"}:
                values[name] = self._export(v["export"], here)
            else:
                values[name] = self.reader.value(v, f"{here}: {name}")
        try:
            fn = fn_source.compile_function(entry, f"{self.shown} ({here})", values, self.program_dir)
        except ApsiError as e:
            raise ApsiError(f"load_model: {e.message}") from None
        self.busy.discard(i)
        self.done[i] = fn
        return fn

    def _export(self, name, here):
        if self._standard is None:
            self._standard = standard_names()
        allowed = type(name) is str and name in self._standard and (
            name not in BUILTINS or name in fn_source.PURE_BUILTINS)
        if not allowed:
            raise ApsiError(f"load_model: {self.shown}: {here}: reads {show(name, True)}, which a model "
                            "file's function may not use (it computes only)")
        return self._standard[name]
