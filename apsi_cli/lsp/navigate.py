"""Hover text and go-to-definition: within the document, and into the `use`d sibling .apsi files."""

import re
from pathlib import Path

from ..editor.docs import help_text
from ..editor.outline import Outline, word_at

_USE_LINE = re.compile(r"^\s*use\s+(\w+)")


def sibling(state, module):
    """The module's NAME.apsi beside the document, or None (an installed module has no file)."""
    path = Path(state.folder) / f"{module}.apsi"
    return path if path.is_file() else None


def sibling_outline(path):
    return Outline(path.read_text(encoding="utf-8-sig", errors="replace"), str(path))


def _module_of(state, qualifier):
    """The module a `use NAME as qualifier` line names, or None."""
    for module, alias, _ in state.outline.uses() if state.outline is not None else ():
        if alias == qualifier:
            return module
    return None


def find_definition(state, lines, line, col):
    """(file path, or None for this document; Definition) of the name at a 0-based position."""
    from ..editor.outline import Definition

    qualifier, word = word_at(lines, line, col)
    if not word:
        return None
    m = _USE_LINE.match(lines[line])
    if m and m.group(1) == word and sibling(state, word):
        return str(sibling(state, word)), Definition(word, "module", 1, 1)
    if qualifier is not None:
        module = _module_of(state, qualifier)
        return _in_module(state, module, word) if module else None
    if state.outline is not None:
        found = state.outline.find(word, line + 1)
        if found is not None:
            return None, found
        for module, alias, _ in state.outline.uses():
            if alias is None:
                hit = _in_module(state, module, word)
                if hit:
                    return hit
    return None


def _in_module(state, module, word):
    path = sibling(state, module)
    if path is None:
        return None
    found = sibling_outline(path).find(word)
    return (str(path), found) if found is not None and found.top else None


def hover_text(state, lines, line, col):
    """Markdown for the name at a 0-based position: its help text, or its definition and kind."""
    qualifier, word = word_at(lines, line, col)
    if not word:
        return None
    if qualifier is not None:
        module = _module_of(state, qualifier)
        value = state.checker.exports.get(module, {}).get(word) if module else None
        if value is not None:
            return _code(help_text(f"{qualifier}.{word}", value))
    defined = find_definition(state, lines, line, col)
    if defined is not None:
        path, d = defined
        where = f"{Path(path).name}:{d.line}" if path else f"line {d.line}"
        return f"```apsi\n{d.detail or d.name}\n```\n{d.kind}, defined at {where}"
    text = help_text(word)
    if text is None and state.outline is not None:
        for module, alias, _ in state.outline.uses():
            value = state.checker.exports.get(module, {}).get(word) if alias is None else None
            if value is not None:
                text = help_text(word, value) + f"\n\n(from use {module})"
                break
    return _code(text) if text else None


def _code(text):
    """The first line (a signature) as Apsi code, the rest as text."""
    head, _, rest = text.partition("\n")
    return f"```apsi\n{head}\n```\n{rest.strip()}"
