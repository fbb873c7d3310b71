"""The permission flags, shared by `apsi` and `apsi run`."""

import click

_FLAGS = [
    click.option("--allow-python", is_flag=True, default=None,
                 help="Allow pyimport, the torch backend and full access to Python objects."),
    click.option("--allow-read", "allow_read", is_flag=False, flag_value="*", default=None,
                 metavar="[=PATH,...]", help="Allow reading outside the project folder (all, or PATHs)."),
    click.option("--allow-write", "allow_write", is_flag=False, flag_value="*", default=None,
                 metavar="[=PATH,...]", help="Allow writing outside the project folder (all, or PATHs)."),
    click.option("--allow-net", "allow_net", is_flag=False, flag_value="*", default=None,
                 metavar="[=HOST[:PORT],...]", help="Allow network access (all, or to HOSTs)."),
    click.option("--allow-env", "allow_env", is_flag=False, flag_value="*", default=None,
                 metavar="[=NAME,...]", help="Allow reading environment variables (all, or NAMEs)."),
    click.option("--allow-run", "allow_run", is_flag=False, flag_value="*", default=None,
                 metavar="[=PROGRAM,...]", help="Allow starting processes (all, or PROGRAMs)."),
    click.option("-A", "--allow-all", is_flag=True, default=None, help="Allow everything."),
] + [
    click.option(f"--deny-{name}", f"deny_{name}", is_flag=False, flag_value="*", default=None,
                 metavar=f"[={what},...]", help=f"Deny {name} (all, or {what}s), whatever else grants it.")
    for name, what in (("read", "PATH"), ("write", "PATH"), ("net", "HOST"), ("env", "NAME"),
                       ("run", "PROGRAM"))
]
# flags that take an optional =VALUE: given bare they mean "all"
SCOPED_FLAGS = tuple(f"--{verb}-{name}" for verb in ("allow", "deny")
                     for name in ("read", "write", "net", "env", "run"))


# `apsi launch`'s options that take a value as the next word (apsi_cli/launch_cmd.py)
LAUNCH_VALUE_OPTIONS = ("--nproc", "--nnodes", "--node-rank", "--rdzv-endpoint", "--rdzv-id")


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
    - `--allow-read FILE` must not take FILE as the list of paths: a bare --allow-read/--allow-env/
      --deny-net/… (before the program's file, or anywhere among `apsi check`'s files) means "all";
      scopes are given only as --allow-env=A,B
    - `-e CODE ARGS…`: as with `python -c`, what follows CODE is the program's `args`, not a file
      to run; they travel as hidden --program-arg=… options."""
    out, i, argv, checking = [], 0, list(argv), False
    while i < len(argv):
        arg = argv[i]
        if arg in SCOPED_FLAGS:
            out.append(arg + "=*")
        elif arg == "-e":
            rest = argv[i + 2:]
            return out + argv[i:i + 2] + [f"--program-arg={a}" for a in rest]
        elif arg in ("--", "-"):          # `-`: the program is standard input; the rest are its args
            return out + argv[i:]
        elif arg in LAUNCH_VALUE_OPTIONS and "launch" in out:     # `apsi launch --nproc 2 …`
            out += argv[i:i + 2]
            i += 1
        elif arg.startswith("-") or arg in ("run", "launch") or checking:
            out.append(arg)
        elif arg == "check" and not {"run", "launch"} & set(out):
            checking = True          # `apsi check --allow-read a.apsi b.apsi`: every word is a file
            out.append(arg)
        else:                        # the program file (or a subcommand): the rest is its own
            return out + argv[i:]
        i += 1
    return out


def to_args(perms):
    """The flags that give these permissions again (for a child `apsi` process)."""
    args = []
    for key, value in sorted(perms.items()):
        if value is None or value is False:
            continue
        flag = "--" + key.replace("_", "-")
        args.append(flag if value is True else f"{flag}={value}")
    return args
