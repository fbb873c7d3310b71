"""`apsi trust [PATH]`: show what an apsi.toml grants and record its contents as trusted.

An apsi.toml grants nothing until its user trusts it (apsi_lang/trust.py explains why); a changed file
needs trusting again. `--yes` trusts without asking (scripts), `--revoke` forgets the file.
"""

from pathlib import Path

import click


@click.command("trust")
@click.argument("path", required=False, default=".", type=click.Path(path_type=Path))
@click.option("--yes", "-y", is_flag=True, help="Trust without asking (for scripts).")
@click.option("--revoke", is_flag=True, help="Forget this file: it grants nothing again.")
def trust(path, yes, revoke):
    """Trust the apsi.toml in PATH (a folder, default the current one, or the file itself)."""
    from apsi_lang import config
    from apsi_lang import trust as record
    from apsi_lang.errors import ConfigError

    if not path.exists():
        raise click.ClickException(f"{path} does not exist: give the project's folder (or its apsi.toml), "
                                   "or nothing for the current folder")
    if path.is_file() and path.name != config.FILENAME:
        raise click.ClickException(f"{path} is not an apsi.toml: give the project's folder (or its "
                                   f"apsi.toml), e.g. apsi trust {path.parent}")
    found = path if path.is_file() else config.find(path)
    if found is None or not found.is_file():
        raise click.ClickException(f"no apsi.toml in {path} or the folders above it; write one (see "
                                   "apsi.toml.example) or run `apsi setup`")
    found = found.resolve()
    if revoke:
        record.revoke(found)
        click.echo(f"{found}: no longer trusted; it grants nothing")
        return
    try:
        data = config.read_bytes(found)       # once: what is shown is what is recorded (issue 29)
        cfg = config.read(found, data)
    except ConfigError as e:
        raise click.ClickException(f"{e} (fix it before trusting it)") from None
    doubt = config.distrust(found)
    if doubt:
        raise click.ClickException(f"{found}: {doubt}; it cannot be trusted where others could change it")
    click.echo(f"{found} ({record.state(found, data)}) grants:")
    show_grants(cfg)
    if not yes and not _confirm("Trust this file's exact contents?"):
        raise click.ClickException("not trusted; the file grants nothing")
    record.trust(found, data)
    click.echo(f"trusted {found} (the contents shown: if it has changed since, or changes later, it "
               "grants nothing until `apsi trust` again)")


def _confirm(question):
    """click.confirm, but input that ends (piped, not a terminal) is a 'no' that says what to do; it
    was Click's bare 'Aborted!'."""
    import sys

    try:
        return click.confirm(question, default=False)
    except click.exceptions.Abort:
        if sys.stdin.isatty():
            raise
        raise click.ClickException("not trusted: the input ended before an answer (it is not a "
                                   "terminal); review the grants above and run `apsi trust --yes` to "
                                   "trust them from a script") from None


def show_grants(cfg):
    """Every grant of a Config, one line each (apsi trust and apsi setup show the same)."""
    for line in grant_lines(cfg) or ["nothing (no permissions, no package index)"]:
        click.echo(f"  {line}")


def grant_lines(cfg):
    """What a Config grants, one line per key, in apsi.toml's own words."""
    lines = [f"allow = {list(cfg.allow)}"] if cfg.allow else []
    lines += [f"{key} = {list(value)}" for key, value in (("read", cfg.read), ("write", cfg.write)) if value]
    lines += [f"{key} = {list(value)}" for key, value in sorted(cfg.names.items()) if value]
    lines += [f"deny = {list(cfg.deny)}"] if cfg.deny else []
    lines += [f"deny_{key} = {list(value)}" for key, value in sorted(cfg.deny_scopes.items()) if value]
    lines += [f"[pkg] torch_index = {cfg.torch_index!r}"] if cfg.torch_index else []
    return lines
