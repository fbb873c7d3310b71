"""The permission flags as the command line spells them, and the keys they set: read by the fast
path (fast.py, without Click) and by the runner's note on flags written after the program. They are
the flags of apsi_cli/options.py (tests/test_cli.py checks the two lists agree)."""

BOOL_FLAGS = {"--allow-python": "allow_python", "--allow-all": "allow_all", "-A": "allow_all"}
SCOPED_FLAGS = {f"--{verb}-{name}": f"{verb}_{name}" for verb in ("allow", "deny")
                for name in ("read", "write", "net", "env", "run")}
PERM_KEYS = tuple(dict.fromkeys([*BOOL_FLAGS.values(), *SCOPED_FLAGS.values()]))
