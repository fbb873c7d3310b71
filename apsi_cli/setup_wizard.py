"""`apsi setup`: the setup wizard.

1. shows the detected hardware and the PyTorch build torch-auto recommends;
2. asks whether to install it (torch-auto: a suitable PyTorch already there is kept);
3. optionally writes an apsi.toml in the current folder with the permissions chosen;
4. ends with the doctor's report (and its exit code).
`--yes` takes every default: install, and write apsi.toml granting `python` unless one exists.
"""

from pathlib import Path

import click

from . import installer


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-y", "--yes", is_flag=True, help="Answer every question with its default (for scripts).")
@click.option("--torch-index", metavar="URL", envvar="APSI_TORCH_INDEX",
              help="Base URL of the PyTorch wheel indexes (as for `apsi pkg install`).")
@click.pass_context
def setup(ctx, yes, torch_index):
    """The setup wizard: hardware, PyTorch build, apsi.toml, then the doctor's report."""
    from . import doctor, hardware, torch_choice

    try:
        click.echo("Looking at this machine …")
        hw = hardware.detect()
        for line in _hardware_lines(hw):
            click.echo(f"  {line}")
        plan = torch_choice.choose(hw)
        click.echo(f"Recommended PyTorch: {plan.reason}")
        for w in plan.warnings:
            click.echo(f"  ! {w}")
        if plan.stop:
            click.echo(f"  ! {plan.stop}")
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
    except (KeyboardInterrupt, click.exceptions.Abort):
        click.echo("\nSetup interrupted; nothing more was changed. Run `apsi setup` again any time.",
                   err=True)
        ctx.exit(1)
    ctx.exit(0 if report.ok else 1)


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
    from apsi_lang.permissions import PERMISSIONS

    target = Path.cwd() / config.FILENAME
    if target.exists():
        click.echo(f"{target} exists already; it is left as it is.")
        return
    if not _ask(yes, f"Write an apsi.toml in {Path.cwd()} (grants permissions to programs here)?", True):
        return
    if yes:
        chosen = ["python"]
        click.echo("Permissions: python (--yes)")
    else:
        click.echo(f"Permissions: {', '.join(PERMISSIONS)}. `python` lets programs use PyTorch and Python "
                   "modules; read/write reach outside the project folder.")
        while True:
            answer = click.prompt("Grant which (comma-separated, or none)", default="python")
            chosen = [p.strip() for p in answer.replace(" ", ",").split(",") if p.strip()]
            if chosen == ["none"]:
                chosen = []
            unknown = [p for p in chosen if p not in PERMISSIONS]
            if not unknown:
                break
            click.echo(f"  unknown: {', '.join(unknown)}; choose from {', '.join(PERMISSIONS)}")
    allow = ", ".join(f'"{p}"' for p in chosen)
    text = ("# Written by `apsi setup`. Permissions for Apsi programs in this folder and below.\n"
            "[run]\n"
            f"allow = [{allow}]\n")
    from apsi_lang.files import atomic_open

    try:
        with atomic_open(target, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as e:
        click.echo(f"! could not write {target}: {e.strerror}; the setup goes on without it")
        return
    click.echo(f"Wrote {target}.")
