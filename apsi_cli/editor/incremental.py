"""Checking a document as it is edited: each top-level statement (chunks.py) is parsed and compiled
by the real parser and compiler on its own, and what did not change is not checked again.

A chunk is compiled with the names the rest of the document declares (as the REPL compiles an input
with the names of earlier ones) and the names its `use` lines bring in, so an undefined name is found
as compiling the whole file finds it. A chunk's result is kept under its text and the part of the
document it depends on (which of its names are declared elsewhere), so an edit re-checks the chunk
it touched, and the chunks whose names it declared or removed."""

from pathlib import Path

from apsi_lang import syntax as S
from apsi_lang.builtins import BUILTINS
from apsi_lang.errors import ApsiError, ApsiSyntaxError

from . import check
from .chunks import split
from .outline import Definitions, Outline, shifted

_CACHE_LIMIT = 20000


class DocumentOutline(Definitions):
    """The outline of a whole document, made of its chunks' outlines."""

    def __init__(self, lines, parts, moved=None):
        self.lines = lines
        self.parts = parts                   # [(line offset, Outline)]
        moved = {} if moved is None else moved      # (offset, chunk text) -> its definitions moved there
        self.definitions = []
        for off, o in parts:
            key = (off, o.text)
            if key not in moved:
                moved[key] = [shifted(d, off) for d in o.definitions]
            self.definitions += moved[key]
        errors = [(off, o.error) for off, o in parts if o.error is not None]
        self.error = errors[0][1] if errors else None

    def uses(self):
        return [(name, alias, line + off) for off, o in self.parts for name, alias, line in o.uses()]


class Checker:
    """Diagnostics for successive versions of one document."""

    def __init__(self, filename, folder, grants=None):
        from apsi_lang import permissions

        self.filename, self.folder = filename, str(folder)
        self.grants = grants or permissions.Grants(project_root=Path(folder))
        self.parsed, self.compiled, self.linted, self.moved = {}, {}, {}, {}
        self.module_times = None
        self.exports = {}                    # module -> {name: value (None for an Apsi file's)}

    def check(self, text, stop=None):
        """See _check; with the recursion limit the compiler parses under (program.compile_source):
        call it on a thread with a big stack (apsi_lang.bigstack), as the language server does."""
        import sys

        from apsi_lang.program import _COMPILE_RECURSION

        before = sys.getrecursionlimit()
        sys.setrecursionlimit(max(before, _COMPILE_RECURSION))
        try:
            return self._check(text, stop)
        finally:
            sys.setrecursionlimit(before)

    def _check(self, text, stop=None):
        """(diagnostics with the document's line numbers, DocumentOutline). `stop()` is asked between
        statements: when it says yes, Stopped is raised, and what was checked so far is kept, so the
        next check of the document starts where this one stopped."""
        stop = stop or (lambda: False)
        lines = text.split("\n")
        parts = []
        for start, count in split(lines):
            _stop_if(stop)
            parts.append((start, self._outline("\n".join(lines[start:start + count]))))
        outline = DocumentOutline(lines, parts, self.moved)
        declared = {d.name for d in outline.definitions if d.top}
        exports, problems = self._exports(outline)
        shadowed = frozenset(d.name for d in outline.all_definitions() if d.name in BUILTINS)
        found = list(problems)
        for offset, part in parts:
            _stop_if(stop)
            if part.error is not None:
                found.append(_moved(check._from_syntax_error(part.error, part), offset))
                continue
            found += [_moved(d, offset) for d in self._compile(part, declared, exports)]
            found += [_moved(d, offset) for d in self._lint(part, shadowed)]
        self._trim()
        return sorted(found, key=lambda d: (d.line, d.col)), outline

    def _outline(self, text):
        part = self.parsed.get(text)
        if part is None:
            part = self.parsed[text] = Outline(text, self.filename)
        return part

    def _exports(self, outline):
        """({name} the document's plain `use` lines bring in, [Diagnostic] for modules that fail)."""
        from .complete import module_exports

        self._forget_changed_files()
        names, problems = set(), []
        for module, alias, line in outline.uses():
            try:
                with self._grants():
                    self.exports[module] = module_exports(module, self.folder, quiet=False)
                    exported = set(self.exports[module])
            except ApsiSyntaxError as e:
                e.used_by.append((self.filename, line, module))
                problems.append(check._from_syntax_error(e, outline))
                continue
            except ApsiError as e:
                problems.append(check.Diagnostic(line, 1, 1 + len(outline.lines[line - 1]), e.message))
                continue
            if alias is None:
                names |= exported
        return frozenset(names), problems

    def _forget_changed_files(self):
        """Sibling module files are compiled again only when one has changed on disk."""
        from apsi_lang import modules

        try:
            times = {p: p.stat().st_mtime_ns for p in Path(self.folder).glob("*.apsi")}
        except OSError:
            times = {}
        if times != self.module_times:
            modules.forget_files()
            self.module_times = times

    def _compile(self, part, declared, exports):
        """The chunk compiled with the names it writes that the rest declares or `use` brings in:
        only those can change its result, and giving it all of a long file's names would make each
        chunk's compile as slow as the file is long. An error is compiled again with all of them, for
        the compiler's "did you mean" among every name."""
        names = part.referenced()
        mine = (frozenset(names & declared), frozenset(names & exports))
        if any(isinstance(s, S.Use) for s in part.body):
            return self._compile_now(part, *mine)     # its module may have changed
        key = (part.text, *mine)
        if key not in self.compiled:
            found = self._compile_now(part, *mine)
            self.compiled[key] = self._compile_now(part, declared, exports) if found else found
        return self.compiled[key]

    def _compile_now(self, part, declared, exports):
        from apsi_lang import modules, permissions
        from apsi_lang.compiler import compile_tree

        def load_module(name, node):
            return modules.names(name, self.folder)

        fixed = set(BUILTINS) | {"args"} | set(exports)
        try:
            with self._grants():
                compile_tree(part.body, self.filename, part.lines, fixed, set(declared), load_module,
                             full_access=permissions.allowed("python"))
        except ApsiSyntaxError as e:
            if e.filename != self.filename:
                return []       # an error in a `use`d file is said on its `use` line (_exports)
            return [check._from_syntax_error(e, part)]
        except (ApsiError, RecursionError):
            return []           # a module that fails is said on its `use` line (_exports)
        return []

    def _lint(self, part, shadowed):
        key = (part.text, shadowed)
        if key not in self.linted:
            self.linted[key] = check.arity_problems(part, shadowed) + \
                check.permission_notes(part, self.folder, self.grants, shadowed)
        return self.linted[key]

    def _grants(self):
        import contextlib

        from apsi_lang import permissions

        @contextlib.contextmanager
        def installed():
            before = permissions.current()
            permissions.set_current(self.grants)
            try:
                yield
            finally:
                permissions.set_current(before)

        return installed()

    def _trim(self):
        for cache in (self.parsed, self.compiled, self.linted, self.moved):
            if len(cache) > _CACHE_LIMIT:
                cache.clear()


class Stopped(Exception):
    """A check given up for a more urgent one (another document's); its work so far is kept."""


def _stop_if(stop):
    if stop():
        raise Stopped


def _moved(diagnostic, offset):
    from dataclasses import replace

    return replace(diagnostic, line=diagnostic.line + offset) if offset else diagnostic
