"""Running Apsi from the command line: files, -e snippets and the REPL, with Apsi-style errors.

Exit codes: 0 ok, 1 runtime error, 2 syntax/usage/config error, 130 interrupted.
No Python traceback reaches the user unless APSI_DEBUG=1.
"""

import sys
from pathlib import Path

from apsi_lang import config, permissions

from .guard import FlagError, _err, debug, guarded, leave_group  # noqa: F401  (runner's names, as before)


def build_grants(perms, program_dir):
    """Flags plus the nearest apsi.toml -> Grants. Prints apsi.toml warnings."""
    cfg = config.load(program_dir)
    for warning in cfg.warnings:
        _err(f"apsi: warning: {warning}")
    granted = set(cfg.allow)
    sources = [(p, str(cfg.path)) for p in cfg.allow]
    read_paths, write_paths = list(cfg.read), list(cfg.write)
    names = {p: list(cfg.names.get(p, ())) for p in permissions.NAME_PERMISSIONS}
    denied = set(cfg.deny)
    denied_scopes = {p: list(v) for p, v in cfg.deny_scopes.items()}
    if perms.get("allow_all"):
        granted |= set(permissions.PERMISSIONS)
        sources += [(p, "--allow-all") for p in permissions.PERMISSIONS]
    if perms.get("allow_python"):
        granted.add("python")
        sources.append(("python", "--allow-python"))
    for name in ("read", "write", "net", "env", "run"):
        value = perms.get(f"allow_{name}")
        _check_scope(f"--allow-{name}", value)
        _check_scope(f"--deny-{name}", perms.get(f"deny_{name}"))
        if value is True or value == "*":
            granted.add(name)
            sources.append((name, f"--allow-{name}"))
        elif value:
            items = [v for v in value.split(",") if v]
            if name in permissions.PATH_PERMISSIONS:
                (read_paths if name == "read" else write_paths).extend(_path_item(p) for p in items)
            else:
                names[name].extend(_scope_item(name, v) for v in items)
            sources.append((name, f"--allow-{name}={value}"))
        deny = perms.get(f"deny_{name}")
        if deny is True or deny == "*":
            denied.add(name)
        elif deny:
            items = [v for v in deny.split(",") if v]
            denied_scopes.setdefault(name, []).extend(
                _path_item(p) if name in permissions.PATH_PERMISSIONS else _scope_item(name, p)
                for p in items)
    root = cfg.root or Path(program_dir).resolve()
    return permissions.Grants(frozenset(granted), tuple(read_paths), tuple(write_paths),
                              Path(root).resolve(), tuple(sources),
                              names=tuple((p, tuple(v)) for p, v in names.items() if v),
                              denied=frozenset(denied),
                              denied_scopes=tuple((p, tuple(v)) for p, v in denied_scopes.items() if v))


def _check_scope(flag, value):
    """`--allow-read=` with nothing after it (as from `--allow-read="$UNSET"`) used to grant the
    whole permission; an empty scope is refused. The bare flag, or `=*`, grants everything."""
    if isinstance(value, str) and flag.endswith("-net") and value != "*":
        for item in (v.strip() for v in value.split(",") if v.strip()):
            problem = permissions.host_problem(item)
            if problem:
                raise FlagError(f"{flag}: {problem}")
    if isinstance(value, str) and value != "*" and not any(v.strip() for v in value.split(",")):
        bare = flag.split("=")[0]
        verb = "allows" if bare.startswith("--allow") else "denies"
        example = {"read": "data,out", "write": "out", "net": "example.com", "env": "HOME,LANG",
                   "run": "git"}[bare.rsplit("-", 1)[1]]
        raise FlagError(f"{flag}={value} has an empty scope (was a variable unset?): give what it {verb}, "
                        f"e.g. {bare}={example}, or the bare flag {bare} for all")


def _path_item(value):
    """A path from a flag: `~` is the home folder here as in every path Apsi checks."""
    return str(Path(value).expanduser().resolve())


def _scope_item(permission, value):
    """A host is compared lower-case (as DNS names are); env and program names exactly."""
    return value.strip().lower() if permission == "net" else value.strip()


def _prepare(perms, program_dir):
    from .sandbox import confine

    grants = build_grants(perms, program_dir)
    permissions.set_current(grants)
    # the kernel's wall goes up before any of the program is compiled or run, and on the main thread
    # before the program's thread starts: Landlock holds the thread that asks and those it starts later
    confine.apply(grants)


def read_stdin():
    """The whole of standard input as program text (a BOM is not code)."""
    data = sys.stdin.buffer.read()
    return data.decode("utf-8-sig", errors="replace")


def run_stdin(args, perms):
    """`apsi -` and `… | apsi`: standard input is the program, run from the current folder."""
    from apsi_lang import program

    text = read_stdin()

    def action():
        ns = program.new_namespace(str(Path.cwd()), args)
        program.compile_source(text, "<stdin>", ns).run()

    return guarded(action, prepare=lambda: _prepare(perms, Path.cwd()), note=_flags_in_args(args, "-"))


def run_file(path, args, perms, after_flag=None):
    """`after_flag`: the bare scoped flag just before the file on the command line, if any."""
    from apsi_lang import program

    if path == "-":
        return run_stdin(args, perms)
    p = Path(path)
    text, failed = _read_program(path, after_flag=after_flag)
    if failed:
        return failed

    def action():
        ns = program.new_namespace(str(p.parent.resolve()), args)
        program.compile_source(text, str(path), ns).run()

    return guarded(action, prepare=lambda: _prepare(perms, p.parent), note=_flags_in_args(args, path))


def _flags_in_args(args, program):
    """For a refused permission: the flags granting it that were written after the program, which
    went to the program as arguments (`apsi train.apsi --allow-python`), and where they belong."""
    from .perm_flags import BOOL_FLAGS, SCOPED_FLAGS

    flags = {a: {**BOOL_FLAGS, **SCOPED_FLAGS}.get(a.partition("=")[0]) for a in args}

    def note(error):
        import shlex

        wanted = {f"allow_{getattr(error, 'permission', None)}", "allow_all"}
        misplaced = [a for a, key in flags.items() if key in wanted]
        if not misplaced or getattr(error, "kind", None) != "permission":
            return None
        moved = " ".join(shlex.quote(a) for a in misplaced)
        return (f"apsi: {', '.join(misplaced)} came after {program}, so the program got "
                f"{'it' if len(misplaced) == 1 else 'them'} as an argument (in `args`), not as a "
                f"permission: put permission flags before the program: apsi {moved} {program} …")
    return note


def _read_program(path, verb="run", after_flag=None):
    """(text, None) or (None, exit code) after saying why the file can't be read."""
    p = Path(path)
    if not p.is_file():
        what = "is a folder" if p.is_dir() else "does not exist" + _meant(path, after_flag)
        usage = {"check": "apsi check FILE.apsi...",
                 "launch": "apsi launch --nproc N [PERMISSIONS] FILE.apsi [ARGS]..."}.get(
            verb, "apsi [PERMISSIONS] FILE.apsi [ARGS]...")
        _err(f"apsi: cannot {verb} '{path}': it {what}. Usage: {usage}")
        return None, 2
    if p.suffix == ".py":
        _err(f"apsi: '{path}' is a Python file: run it with python. Apsi runs Apsi programs (.apsi); "
             "Python modules are reachable from Apsi with pyimport(\"name\") and --allow-python.")
        return None, 2
    try:
        data = p.read_bytes()
        return data.decode("utf-8-sig"), None  # a BOM from Windows editors is not code
    except OSError as e:
        _err(f"apsi: cannot read '{path}': {e.strerror or e}")
        return None, 2
    except UnicodeDecodeError as e:
        _err(_not_text(path, data, e))
        return None, 2


def _not_text(path, data, e):
    """Why a file that is not UTF-8 cannot be a program, and what to do: 'save it as UTF-8' only
    where it is text in another encoding; a model file or other binary data is named as such."""
    if data.startswith(b"PK\x03\x04") and Path(path).suffix == ".apsim":
        import shlex

        return (f"apsi: '{path}' is a model file (save_model), not a program: serve it with "
                f"`apsi serve {shlex.quote(str(path))}`, or load it in a program with load_model(\"{path}\")")
    if b"\0" in data[:8192]:
        return f"apsi: '{path}' is binary data, not an Apsi program (a text file, usually FILE.apsi)"
    return (f"apsi: '{path}' is not UTF-8 text (byte {e.object[e.start]:#x} at position {e.start}); "
            "save it as UTF-8")


def _meant(path, after_flag=None):
    """' (did you mean …?)' for a name that is no file: a scope given without '=' (`--allow-env HOME`),
    a misspelt command (`apsi doctr`), the program without its .apsi (`apsi train`), or a misspelt
    program beside it (`apsi trian.apsi`); else ''."""
    import difflib

    from .commands import LAZY_COMMANDS

    if after_flag:
        return (f" (did you mean {after_flag}={path}? A scope is written with '=': the bare "
                f"{after_flag} grants all, and {path} was taken for the program)")
    if path in ("-e", "-c"):
        return " (a snippet runs with `apsi -e CODE`, without run)"
    p = Path(path)
    if not p.suffix and p.name == path:
        close = difflib.get_close_matches(path, LAZY_COMMANDS, n=1, cutoff=0.6)
        if close:
            return f" (did you mean the command `apsi {close[0]}`?)"
    if p.suffix != ".apsi" and p.with_name(p.name + ".apsi").is_file():
        return f" (did you mean {path}.apsi?)"
    try:
        programs = [q.stem for q in p.parent.glob("*.apsi")]
    except OSError:
        return ""
    # the stems: a shared '.apsi' would make any two names look alike
    close = difflib.get_close_matches(p.stem, programs, n=1, cutoff=0.75)
    return f" (did you mean {p.with_name(close[0] + '.apsi')}?)" if close else ""


def check_file(path, perms):
    """Compile a program (and the modules it uses) without running it: 0, or 2 after the error."""
    from apsi_lang import program

    text, failed = _read_program(path, "check")
    if failed:
        return failed

    def action():
        ns = program.new_namespace(str(Path(path).parent.resolve()))
        program.compile_source(text, str(path), ns)

    code = guarded(action, prepare=lambda: _prepare(perms, Path(path).parent))
    return 2 if code else 0


def run_code(code, perms, args=()):
    from apsi_lang import program

    def action():
        ns = program.new_namespace(str(Path.cwd()), args)
        program.compile_source(code, "<-e>", ns, echo=True).run()

    return guarded(action, prepare=lambda: _prepare(perms, Path.cwd()), note=_flags_in_args(args, "-e CODE"))


def repl(perms):
    from .repl import Repl

    shell = Repl()           # opens the history file before the confinement
    code = guarded(lambda: None, prepare=lambda: _prepare(perms, Path.cwd()))
    if code:
        return code
    return shell.loop()
