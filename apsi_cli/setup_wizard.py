"""`apsi setup`: the setup wizard.

1. shows the detected hardware and the PyTorch build torch-auto recommends;
2. asks whether to install it (torch-auto: a suitable PyTorch already there is kept);
3. optionally writes an apsi.toml in the current folder with the permissions chosen; in a subfolder
   of a project that has one, it offers to add the permissions to that file instead (a new file here
   would shadow it);
4. ends with the doctor's report (and its exit code).
`--yes` takes every default: install (but not from an index set by an apsi.toml), and write apsi.toml
granting `python` unless one exists (or add `python` to the project's).
"""

from pathlib import Path

import click

from .packages import installer


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-y", "--yes", is_flag=True, help="Answer every question with its default (for scripts).")
@click.option("--torch-index", metavar="URL", envvar="APSI_TORCH_INDEX",
              help="Base URL of the PyTorch wheel indexes (as for `apsi pkg install`).")
@click.pass_context
def setup(ctx, yes, torch_index):
    """The setup wizard: hardware, PyTorch build, apsi.toml, then the doctor's report."""
    from . import doctor
    from .packages import hardware, torch_choice

    try:
        click.echo("Looking at this machine …")
        hw = hardware.detect()
        for line in _hardware_lines(hw):
            click.echo(f"  {line}")
        plan = torch_choice.choose(hw)
        click.echo(f"Recommended PyTorch: {plan.reason}")
        for w in plan.warnings:
            click.echo(f"  ! {w}")
        try:
            base, source = installer.index_source(torch_index)
        except click.exceptions.Exit:          # a malformed apsi.toml: said already; the doctor shows it
            base, source = None, ""
        kept = _suitable_torch(hw, plan)
        if plan.stop:
            click.echo(f"  ! {plan.stop}")
        elif kept:
            click.echo(f"{kept}: it is kept, and nothing is installed.")
        elif source.startswith("[pkg]") and not _ask(
                yes, f"PyTorch would come from {base} ({source}), not PyTorch's own index. "
                     "Install it from there (apsi pkg install torch-auto)?", False):
            click.echo("  Nothing installed. `apsi pkg install torch-auto --torch-index "
                       "https://download.pytorch.org/whl` takes PyTorch's own index.")
        elif _ask(yes, "Install it now (apsi pkg install torch-auto)?", True):
            try:
                installer.install(installer.Request(names=("torch-auto",), torch_index=torch_index,
                                                    hardware=hw, yes=True))
            except click.exceptions.Exit as e:
                if e.exit_code:
                    click.echo("  The installation did not finish; the rest of the setup goes on. "
                               "Try again later with: apsi pkg install torch-auto")
        _write_config(yes)
        click.echo()
        report = doctor.collect((ctx.obj or {}).get("perms", {}) if isinstance(ctx.obj, dict) else {})
        doctor.render(report)
    except (KeyboardInterrupt, click.exceptions.Abort) as e:
        import sys

        if isinstance(e, click.exceptions.Abort) and not sys.stdin.isatty():
            # click.confirm met the end of piped input: nobody pressed Ctrl-C
            click.echo("\nThe setup asks questions, and its input ended before an answer (it is not a "
                       "terminal); nothing more was changed. Run `apsi setup` in a terminal, or "
                       "`apsi setup --yes` to take every default.", err=True)
        else:
            click.echo("\nSetup interrupted; nothing more was changed. Run `apsi setup` again any time.",
                       err=True)
        ctx.exit(1)
    ctx.exit(0 if report.ok else 1)


def _suitable_torch(hw, plan):
    """Why the PyTorch already installed suits this machine, or None (none, or one to replace): the
    question whose answer changes nothing is not asked."""
    from .packages import pipcmd, torch_choice

    try:
        torch = pipcmd.probe(pipcmd.target_python())["torch"]
    except pipcmd.PipError:
        return None
    if not torch.get("found"):
        return None
    suits, why = torch_choice.suitability(hw, plan, torch)
    return why if suits else None


def _ask(yes, question, default):
    if yes:
        click.echo(f"{question} {'yes' if default else 'no'} (--yes)")
        return default
    return click.confirm(question, default=default)


def _hardware_lines(hw):
    where = f"{hw.system} {hw.machine}" + (" (WSL)" if hw.wsl else "")
    yield f"system: {where}"
    nv = hw.nvidia
    if nv.gpus:
        for g in nv.gpus:
            mem = f", {g.memory_mib / 1024:.0f} GiB" if g.memory_mib else ""
            yield f"NVIDIA: {g.describe()}{mem}, driver {nv.driver}"
    elif nv.status != "absent":
        yield f"NVIDIA: {nv.note or nv.status}" + (f" (driver {nv.driver})" if nv.driver else "")
    for g in hw.amd:
        yield f"AMD: {g.describe()}"
    for g in hw.intel:
        yield f"Intel: {g.describe()}"
    if hw.apple_mps:
        yield "Apple silicon GPU (MPS)"
    if not hw.gpus and not hw.apple_mps and nv.status == "absent":
        yield "no GPU found: everything runs on the CPU"


def _write_config(yes):
    from apsi_lang import config

    here = Path.cwd() / config.FILENAME
    if here.exists():
        click.echo(f"{here} exists already; it is left as it is.")
        return
    above = config.find(Path.cwd())
    if above is not None:
        click.echo(f"This folder is inside the project at {above.parent}: its {above} applies here too, "
                   "and a new apsi.toml here would shadow it (its settings would stop applying here).")
        if _ask(yes, f"Add permissions to {above} instead?", True):
            _edit_config(above, _choose_permissions(yes), yes)
            return
        if not _ask(yes, f"Write a separate apsi.toml in {Path.cwd()} anyway?", False):
            return
    elif not _ask(yes, f"Write an apsi.toml in {Path.cwd()} (grants permissions to programs here)?", True):
        return
    chosen = _choose_permissions(yes)
    allow = ", ".join(f'"{p}"' for p in chosen)
    text = ("# Written by `apsi setup`. Permissions for Apsi programs in this folder and below.\n"
            "[run]\n"
            f"allow = [{allow}]\n")
    if _write(here, text.encode("utf-8"), yes, vouched=True):     # every grant in it was chosen here
        click.echo(f"Wrote {here}.")


def _choose_permissions(yes):
    from apsi_lang.permissions import PERMISSIONS

    if yes:
        click.echo("Permissions: python (--yes)")
        return ["python"]
    click.echo(f"Permissions: {', '.join(PERMISSIONS)}. `python` lets programs use PyTorch and Python "
               "modules; read/write reach outside the project folder.")
    while True:
        answer = click.prompt("Grant which (comma-separated, or none)", default="python")
        chosen = [p.strip() for p in answer.replace(" ", ",").split(",") if p.strip()]
        if chosen == ["none"]:
            return []
        unknown = [p for p in chosen if p not in PERMISSIONS]
        if not unknown:
            return chosen
        click.echo(f"  unknown: {', '.join(unknown)}; choose from {', '.join(PERMISSIONS)}")


def _edit_config(path, chosen, yes):
    """Add `chosen` to [run] allow in an existing apsi.toml, changing nothing else in it. The file is
    read once: its trust is judged on the bytes that are edited (issue 29)."""
    import re
    import tomllib

    from apsi_lang import config, trust
    from apsi_lang.errors import ConfigError

    try:
        data = config.read_bytes(path)
        text = data.decode("utf-8")
        have = list(tomllib.loads(text).get("run", {}).get("allow", []))
    except (ConfigError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        click.echo(f"! {path} cannot be edited ({e}); it is left as it is")
        return
    new = [p for p in chosen if p not in have]
    if not new:
        click.echo(f"{path} already grants {', '.join(chosen) or 'what was chosen'}; it is left as it is.")
        return
    allow = have + new
    line = "allow = [" + ", ".join(f'"{p}"' for p in allow) + "]"
    lines = text.splitlines(keepends=True)
    start = next((i for i, ln in enumerate(lines) if re.fullmatch(r"\s*\[run\]\s*(#.*)?", ln.strip())), None)
    if start is None:
        edited = text.rstrip("\n") + ("\n\n" if text.strip() else "") + f"[run]\n{line}\n"
    else:
        end = next((i for i in range(start + 1, len(lines)) if lines[i].lstrip().startswith("[")
                    and not re.match(r"\s*allow\s*=", lines[i])), len(lines))
        section = "".join(lines[start + 1:end])
        m = re.search(r"(?ms)^[ \t]*allow\s*=\s*\[.*?\]", section)
        section = section[:m.start()] + line + section[m.end():] if m else line + "\n" + section
        edited = "".join(lines[:start + 1]) + section + "".join(lines[end:])
    try:
        ok = tomllib.loads(edited).get("run", {}).get("allow") == allow
    except tomllib.TOMLDecodeError:
        ok = False
    if not ok:
        click.echo(f"! could not edit {path} safely; add {', '.join(new)} to [run] allow yourself")
        return
    # the rest of the file keeps the trust it had: trusted before, its grants were vouched for already
    if _write(path, edited.encode("utf-8"), yes, vouched=trust.state(path, data) == trust.TRUSTED):
        click.echo(f"Added {', '.join(new)} to [run] allow in {path}.")


def _write(path, data, yes, vouched):
    """Write `data` to the apsi.toml at `path`, show every grant it holds (as `apsi trust` does), and
    trust exactly these bytes: when every grant in them was chosen or trusted already (`vouched`), or
    when the user says so having seen them. A file changed by someone else meanwhile stays untrusted."""
    from apsi_lang import config, trust
    from apsi_lang.files import atomic_open

    from .trust_cmd import show_grants

    try:
        with atomic_open(path, "wb") as f:
            f.write(data)
    except OSError as e:
        click.echo(f"! could not write {path}: {e.strerror}; the setup goes on without it")
        return False
    click.echo(f"{path} grants:")
    show_grants(config.read(path, data))
    if vouched or (not yes and click.confirm("Trust this file's exact contents?", default=False)):
        try:
            trust.trust(path, data)
        except OSError as e:
            click.echo(f"! could not record the trust ({e.strerror}); run: apsi trust {path.parent}")
    else:
        click.echo(f"  Not trusted: it grants nothing until you review it and run: apsi trust {path.parent}")
    return True
