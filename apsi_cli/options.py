"""The permission flags, shared by `apsi` and `apsi run`."""

import click

_FLAGS = [
    click.option("--allow-python", is_flag=True, default=None,
                 help="Allow pyimport, the torch backend and full access to Python objects."),
    click.option("--allow-read", "allow_read", is_flag=False, flag_value="*", default=None,
                 metavar="[=PATH,...]", help="Allow reading outside the project folder (all, or PATHs)."),
    click.option("--allow-write", "allow_write", is_flag=False, flag_value="*", default=None,
                 metavar="[=PATH,...]", help="Allow writing outside the project folder (all, or PATHs)."),
    click.option("--allow-net", is_flag=True, default=None, help="Allow network access."),
    click.option("--allow-env", is_flag=True, default=None, help="Allow reading environment variables."),
    click.option("--allow-run", is_flag=True, default=None, help="Allow starting processes."),
    click.option("-A", "--allow-all", is_flag=True, default=None, help="Allow everything."),
]


def permission_options(f):
    for flag in reversed(_FLAGS):
        f = flag(f)
    return f


def merge(outer, inner):
    """Flags given to `apsi` and to `apsi run` both count."""
    merged = dict(outer or {})
    for key, value in (inner or {}).items():
        if value is not None:
            merged[key] = value
    return merged


def normalize_argv(argv):
    """Two things Click can't say on its own:
    - `--allow-read FILE` must not take FILE as the list of paths: a bare --allow-read/--allow-write
      (before the program's file) means "everywhere"; paths are given only as --allow-read=PATH,…
    - `-e CODE ARGS…`: as with `python -c`, what follows CODE is the program's `args`, not a file
      to run; they travel as hidden --program-arg=… options."""
    out, i, argv = [], 0, list(argv)
    while i < len(argv):
        arg = argv[i]
        if arg in ("--allow-read", "--allow-write"):
            out.append(arg + "=*")
        elif arg == "-e":
            rest = argv[i + 2:]
            return out + argv[i:i + 2] + [f"--program-arg={a}" for a in rest]
        elif arg in ("--", "-"):          # `-`: the program is standard input; the rest are its args
            return out + argv[i:]
        elif arg.startswith("-") or arg == "run":
            out.append(arg)
        else:                        # the program file (or a subcommand): the rest is its own
            return out + argv[i:]
        i += 1
    return out
