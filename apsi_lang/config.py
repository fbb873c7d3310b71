"""apsi.toml: found in the program's folder or any parent; grants permissions and sets pkg options.

    [run]
    allow = ["python"]          # whole permissions
    read = ["../data"]          # folders readable outside the project (relative to apsi.toml)
    write = ["/tmp/out"]        # folders writable outside the project
    env = ["HOME", "PATH"]      # these environment variables only (allow = ["env"] grants all)
    run = ["git"]               # these programs only
    net = ["example.com", "localhost:8080"]   # these hosts (any port) or host:port only
    deny = ["net"]              # denied whole, whatever else grants them
    deny_read = ["secrets"]     # denied paths or names: deny_read, deny_write, deny_env, deny_run, deny_net

    [pkg]
    torch_index = "https://download.pytorch.org/whl"   # base URL of the PyTorch wheel indexes

Unknown keys give a warning; a bad value is a ConfigError naming the file and the key.
"""

from pathlib import Path

from .errors import ConfigError
from .permissions import PERMISSIONS, host_problem
from .records import Factory, record

FILENAME = "apsi.toml"
SCOPED = ("env", "run", "net")
DENY_KEYS = tuple(f"deny_{p}" for p in ("read", "write", "env", "run", "net"))
KNOWN = {"run": {"allow", "read", "write", "deny", *SCOPED, *DENY_KEYS}, "pkg": {"torch_index"}}


@record
class Config:
    path: Path | None = None            # the apsi.toml read, or None
    allow: tuple = ()
    read: tuple = ()                     # absolute paths
    write: tuple = ()
    torch_index: str | None = None
    warnings: list = Factory(list)
    names: dict = Factory(dict)          # env/run/net -> names granted
    deny: tuple = ()                                    # permissions denied whole
    deny_scopes: dict = Factory(dict)     # permission -> denied paths or names
    trust: str | None = None                            # load(): the trust state of the bytes parsed

    @property
    def root(self):
        return self.path.parent if self.path else None

    def grants_anything(self):
        """True when the file would change what programs may do, or where pip installs from."""
        return bool(self.allow or self.read or self.write or any(self.names.values()) or self.torch_index)


def find(start):
    """The nearest apsi.toml in `start` or a parent folder, or None."""
    here = Path(start).resolve()
    for folder in (here, *here.parents):
        candidate = folder / FILENAME
        if candidate.is_file():
            return candidate
    return None


def load(start):
    """Read the nearest apsi.toml above `start` (a folder); an empty Config when there is none, or
    when the one found is not trusted (it then grants nothing, and a warning says why)."""
    path = find(start)
    if path is None:
        return Config()
    doubt = distrust(path)
    if doubt:
        return Config(warnings=[f"ignoring {path}: {doubt}, so it grants nothing (as git ignores a "
                                "repository it does not trust). Move the project to a folder only you "
                                "can write, or fix the owner and mode (chmod o-w)."])
    # one read: the bytes that are parsed are the bytes whose hash is compared with the trusted one
    # (two reads let a program that may write apsi.toml swap its text in between: issue 29)
    data = read_bytes(path)
    cfg = read(path, data)
    from . import trust

    cfg.trust = trust.state(path, data)
    if cfg.trust == trust.TRUSTED or not cfg.grants_anything():
        return cfg
    # untrusted or changed: the file still marks the project's root, but grants nothing
    why = "has changed since you trusted it" if cfg.trust == trust.CHANGED else "is not trusted yet"
    return Config(path=path, trust=cfg.trust, warnings=cfg.warnings + [
        f"{path} {why}, so it grants nothing; review and trust it with: apsi trust {path.parent}"])


def distrust(path):
    """Why an apsi.toml must not be trusted, or None: it grants permissions, so one that another
    user wrote or could write (a shared temporary folder) would grant them to that user."""
    import os
    import stat

    me = os.getuid() if hasattr(os, "getuid") else None
    if me is None:
        return None
    # a link named apsi.toml: the file it leads to, and both folders (the link's and the file's)
    folders = dict.fromkeys([Path(path).parent, Path(os.path.realpath(path)).parent])
    try:
        st = os.stat(path)
        folder_stats = [os.stat(f) for f in folders]
    except OSError:
        return "it cannot be examined"
    if st.st_uid != me:
        return f"it is owned by another user (uid {st.st_uid})"
    if st.st_mode & stat.S_IWOTH:
        return "other users can write it"
    for folder in folder_stats:
        if folder.st_mode & stat.S_IWOTH:
            return "its folder is writable by other users"
        if folder.st_uid != me and folder.st_uid != 0:
            return f"its folder is owned by another user (uid {folder.st_uid})"
    return None


def read_bytes(path):
    """The file's bytes, read once (ConfigError if it cannot be read)."""
    try:
        return Path(path).read_bytes()
    except OSError as e:
        raise ConfigError(f"{path}: cannot read it: {e.strerror}") from None


def read(path, data=None):
    """The Config an apsi.toml's text says, trusted or not. `data`: the file's bytes, read by the
    caller so that what it hashes or shows is exactly what is parsed here."""
    import tomllib  # only when there is an apsi.toml: keeps start-up light

    path = Path(path)
    if data is None:
        data = read_bytes(path)
    try:
        data = tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        utf16 = " (it is UTF-16, as some Windows editors save 'Unicode')" if data[:2] in (b"\xff\xfe",
                                                                                         b"\xfe\xff") else ""
        raise ConfigError(f"{path}: not UTF-8 text{utf16}: save it as UTF-8") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: not valid TOML: {e}") from None
    cfg = Config(path=path)
    for section, value in data.items():
        if section not in KNOWN:
            cfg.warnings.append(_unknown_section(path, section, value))
            continue
        if not isinstance(value, dict):
            raise ConfigError(f"{path}: '{section}' must be a table, like [{section}]")
        for key in value:
            if key not in KNOWN[section]:
                known, meant = ", ".join(sorted(KNOWN[section])), _meant(key, KNOWN[section])
                cfg.warnings.append(f"{path}: unknown key {section}.{key} ignored{meant} (known: {known})")
    run = data.get("run", {})
    cfg.allow = tuple(_strings(path, "run.allow", run.get("allow", [])))
    for name in cfg.allow:
        if name not in PERMISSIONS:
            raise ConfigError(f"{path}: run.allow has unknown permission {name!r}; "
                              f"choose from {', '.join(PERMISSIONS)}")
    cfg.read = tuple(_paths(path, "run.read", run.get("read", [])))
    cfg.write = tuple(_paths(path, "run.write", run.get("write", [])))
    for key in SCOPED:
        values = _strings(path, f"run.{key}", run.get(key, []))
        cfg.names[key] = tuple(v.lower() if key == "net" else v for v in values)
    cfg.deny = tuple(_strings(path, "run.deny", run.get("deny", [])))
    for name in cfg.deny:
        if name not in PERMISSIONS:
            raise ConfigError(f"{path}: run.deny has unknown permission {name!r}; "
                              f"choose from {', '.join(PERMISSIONS)}")
    for key in DENY_KEYS:
        perm = key[5:]
        if perm in ("read", "write"):
            cfg.deny_scopes[perm] = tuple(_paths(path, f"run.{key}", run.get(key, [])))
        else:
            values = _strings(path, f"run.{key}", run.get(key, []))
            cfg.deny_scopes[perm] = tuple(v.lower() if perm == "net" else v for v in values)
    index = data.get("pkg", {}).get("torch_index")
    if index is not None and not (isinstance(index, str) and index.strip()):
        raise ConfigError(f"{path}: pkg.torch_index must be a URL string, "
                          f"like \"https://download.pytorch.org/whl\"")
    cfg.torch_index = index.rstrip("/") if index else None
    return cfg


# what each list holds, for the message that shows the form
EXAMPLES = {"allow": '["python"]', "deny": '["net"]', "read": '["../data"]', "write": '["out"]',
            "env": '["HOME"]', "run": '["git"]', "net": '["example.com", "localhost:8080"]'}


def _strings(path, key, value):
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        example = EXAMPLES[key.split(".")[-1].removeprefix("deny_")]
        raise ConfigError(f"{path}: {key} must be a list of strings, like {example}")
    if key.endswith("net"):
        problem = next(filter(None, map(host_problem, value)), None)
        if problem:
            raise ConfigError(f"{path}: {key}: {problem}")
    return value


def _meant(name, choices):
    import difflib

    close = difflib.get_close_matches(name, choices, n=1)
    return f" (did you mean {close[0]}?)" if close else ""


def _unknown_section(path, name, value):
    """The warning for a top-level name that is no section: a key written above any [section] line
    (`allow = [...]` at the top) is a TOML key of the file itself, not of [run]."""
    if isinstance(value, dict):
        return f"{path}: unknown section [{name}] ignored{_meant(name, KNOWN)} (known: run, pkg)"
    owner = next((section for section, keys in KNOWN.items() if name in keys), None)
    if owner:
        return (f"{path}: '{name}' stands before any [section] line, so it is ignored: "
                f"put a line [{owner}] above it")
    return f"{path}: unknown key '{name}' ignored: keys go under [run] or [pkg]"


def _paths(path, key, value):
    """Absolute paths, relative ones taken from the folder of the file itself: where a link named
    apsi.toml leads, as `apsi trust` (which resolves the file) shows them. From the link's folder, the
    same trusted text would grant another place for each link that leads to it."""
    import os

    folder = Path(os.path.realpath(path)).parent
    return [str((folder / os.path.expanduser(p)).resolve()) for p in _strings(path, key, value)]
