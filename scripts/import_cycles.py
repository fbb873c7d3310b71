"""The file-level import graph of apsi_lang, apsi_cli and apsi_layers, and its circles.

Every import counts, those inside functions too (a function-level import that closes a circle is still
a circle between the two files: each needs the other). Prints the two-file circles and the number of
strongly connected groups larger than one file; exits 1 when a circle is found outside ALLOWED.

    python scripts/import_cycles.py            # the two-file circles
    python scripts/import_cycles.py --groups   # every strongly connected group too
    python scripts/import_cycles.py --backends # the files outside backends/<name>/ that import it
"""

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("apsi_lang", "apsi_cli", "apsi_layers")
# the language needs these two: an f-string's parts are parsed by the parser, and a module is a program
ALLOWED = {frozenset({"apsi_lang.fstrings", "apsi_lang.parser"}),
           frozenset({"apsi_lang.modules", "apsi_lang.program"})}


def modules():
    found = {}
    for pkg in PACKAGES:
        for path in (ROOT / pkg).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _resolve(name, known):
    """The module a dotted name refers to: itself, or the longest known prefix (a name in a module)."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def imports(name, path, known):
    is_pkg = path.name == "__init__.py"
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                here = name.split(".") if is_pkg else name.split(".")[:-1]
                here = here[:len(here) - (node.level - 1)]
                base = ".".join(here + ([base] if base else []))
            # `from pkg import sub` needs the file sub; `from pkg import name` needs pkg's own file
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        else:
            continue
        for t in targets:
            hit = _resolve(t, known)
            if hit and hit != name:
                out.add(hit)
    return out


def graph():
    known = modules()
    return {name: imports(name, path, known) for name, path in known.items()}


def two_cycles(g):
    return sorted({tuple(sorted((a, b))) for a, deps in g.items() for b in deps if a in g.get(b, ())})


def groups(g):
    """Strongly connected groups of more than one module (Tarjan's algorithm, iterative)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(root):
        work = [(root, iter(sorted(g[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        x = stack.pop()
                        on.discard(x)
                        comp.append(x)
                        if x == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
                continue
            if w not in index:
                index[w] = low[w] = counter[0]
                counter[0] += 1
                stack.append(w)
                on.add(w)
                work.append((w, iter(sorted(g[w]))))
            elif w in on:
                low[v] = min(low[v], index[w])

    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def backend_reach(g):
    """[(importer, backend module)]: a file outside backends/<name>/ (the registry aside) that imports
    a backend's module, or a backend that imports a sibling."""
    out = []
    for a, deps in sorted(g.items()):
        for b in sorted(deps):
            parts = b.split(".")
            if parts[:2] != ["apsi_layers", "backends"] or len(parts) < 4:
                continue
            own = a.split(".")[:3] == parts[:3]
            if not own and a not in SEAM:
                out.append((a, b))
    return out


SEAM = {"apsi_layers.backends.registry"}        # the one file that finds backends by name


def main(argv):
    g = graph()
    if "--backends" in argv:
        reach = backend_reach(g)
        for a, b in reach:
            print(f"{a} -> {b}")
        print(f"{len({a for a, _ in reach})} files outside a backend reach into one")
        return 0
    pairs = two_cycles(g)
    for a, b in pairs:
        print(f"{a} <-> {b}{'   (allowed)' if frozenset((a, b)) in ALLOWED else ''}")
    bad = [p for p in pairs if frozenset(p) not in ALLOWED]
    print(f"{len(pairs)} two-file circles, {len(bad)} outside the allowed ones")
    if "--groups" in argv:
        for comp in groups(g):
            print(f"group of {len(comp)}: {', '.join(comp)}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
