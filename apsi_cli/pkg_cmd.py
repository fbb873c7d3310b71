"""`apsi pkg`: install, list and remove packages in the Python that runs Apsi (PyTorch builds too)."""

import click

from .packages import installer, pipcmd, torch_builds, torch_choice


def _names_help():
    rows = "\n".join(f"  {name:<12} {b.help}" for name, b in torch_builds.BUILDS.items())
    return f"\b\nPyTorch builds and bundles:\n{rows}\n  anything else  an ordinary pip package"


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def pkg():
    """Install, list and remove packages in the Python that runs Apsi."""


@pkg.command("install", epilog=_names_help())
@click.argument("names", nargs=-1, required=True)
@click.option("--dry-run", is_flag=True, help="Print the plan and the exact pip commands; change nothing.")
@click.option("--index-url", metavar="URL",
              help="Take torch (or the packages) from this index, e.g. a ROCm one.")
@click.option("--torch-index", metavar="URL", envvar="APSI_TORCH_INDEX",
              help="Base URL of the PyTorch wheel indexes (default https://download.pytorch.org/whl; "
                   "also APSI_TORCH_INDEX or [pkg] torch_index in apsi.toml).")
@click.option("-y", "--yes", is_flag=True,
              help="Replace an unsuitable PyTorch, and accept an index set by apsi.toml, without asking.")
def install(names, dry_run, index_url, torch_index, yes):
    """Install NAMES into the Python that runs Apsi.

    `torch-auto` reads this machine (NVIDIA driver and GPUs, AMD, Intel, macOS) and picks the PyTorch
    build that fits; a PyTorch 2.3 or newer that suits the machine is used as it is, one that does not
    is replaced after a confirmation (or with --yes). Naming a build replaces the one installed, so
    there is only ever one; torchvision and torchaudio move with it.
    """
    installer.install(installer.Request(names=names, index_url=index_url, torch_index=torch_index,
                                        dry_run=dry_run, yes=yes))


@pkg.command("list")
def list_():
    """Show the packages of Apsi's Python with versions, and its PyTorch build."""
    python = pipcmd.target_python()
    try:
        info = pipcmd.probe(python)
    except pipcmd.PipError as e:
        installer.fail(e.message)
    if info.get("pip") is None:
        installer.fail(f"pip is not installed in {python}: run `{python} -m ensurepip --upgrade`")
    import json
    import subprocess

    cmd = pipcmd.pip_cmd(python, "list", "--format=json", "--disable-pip-version-check")
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)
        packages = json.loads(r.stdout) if r.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired, ValueError):
        packages = None
    if packages is None:
        installer.fail(f"`{pipcmd.quote(cmd)}` failed; run it yourself to see why")
    click.echo(f"Packages in {python} (Python {info['python']['version']}):")
    width = max((len(p["name"]) for p in packages), default=0)
    for p in sorted(packages, key=lambda p: p["name"].lower()):
        click.echo(f"  {p['name']:<{width}}  {p['version']}")
    click.echo(_torch_line(info["torch"], info["python"].get("platform", "")))


def _torch_line(torch, platform_tag):
    if not torch.get("found"):
        return "PyTorch: not installed (apsi pkg install torch-auto)"
    key = torch_choice.installed_key(torch)
    if torch.get("cuda"):
        uses = f"CUDA {torch['cuda']} build: NVIDIA GPUs, and the CPU"
    elif torch.get("hip"):
        uses = f"ROCm {torch['hip']} build: AMD GPUs, and the CPU"
    elif key == "xpu":
        uses = "XPU build: Intel GPUs, and the CPU"
    else:
        uses = "CPU build" + (", with MPS on Apple silicon" if platform_tag.startswith("macosx") else "")
    note = "" if torch.get("metadata_version") else " (no pip metadata: installed by hand?)"
    return f"PyTorch: {torch.get('version') or 'unknown version'} — {uses}{note}"


@pkg.command("uninstall")
@click.argument("names", nargs=-1, required=True)
def uninstall(names):
    """Remove NAMES from the Python that runs Apsi (any torch-… name removes PyTorch)."""
    python = pipcmd.target_python()
    targets = []
    for name in names:
        build = torch_builds.BUILDS.get(name)
        for real in (["torch", *build.extras] if build else [name]):
            if real not in targets:
                targets.append(real)
    if "torch" in targets:
        # torchvision / torchaudio cannot work without the PyTorch they were built for: they go with it
        try:
            family = [m for m, v in pipcmd.probe(python).get("family", {}).items() if v and m not in targets]
        except pipcmd.PipError:
            family = []
        if family:
            click.echo(f"{', '.join(family)} goes with PyTorch (it was built for it).")
            targets += family
    cmd = pipcmd.pip_cmd(python, "uninstall", "-y", *targets)
    try:
        rc, err = pipcmd.run_pip(cmd)
    except pipcmd.PipError as e:
        installer.fail(e.message)
    except KeyboardInterrupt as e:
        from apsi_lang import signals

        installer.fail(f"{signals.describe(e)}; `apsi pkg list` shows what is installed now",
                       code=signals.exit_code(e))
    if rc != 0:
        last = [ln for ln in err.strip().splitlines() if ln.strip()]
        installer.fail(f"pip could not uninstall {' '.join(targets)}: {last[-1] if last else 'no message'}")
