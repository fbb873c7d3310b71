"""`apsi pkg install`: turn names into a plan, tell the user, and carry it out with pip.

A PyTorch build is installed in two steps so that a failure never leaves a broken install behind:
1. `pip download --no-deps` the torch wheel into a temporary folder (a missing wheel or a network
   failure stops here, with the old build untouched);
2. `pip install` that wheel file; pip swaps the old build for it (and rolls back if the swap fails),
   fetching dependencies it lacks first.
pip's cache is used by both steps, so a build downloaded before is not downloaded again.
"""

import glob
import os
import shutil
import tempfile
from dataclasses import dataclass

import click

from . import pipcmd, torch_builds, torch_choice

Exit = click.exceptions.Exit


@dataclass
class Request:
    names: tuple
    index_url: str | None = None          # --index-url: for torch (or plain packages)
    torch_index: str | None = None        # --torch-index: base of PyTorch's indexes
    dry_run: bool = False
    hardware: object = None               # for tests and the setup wizard: skip detection


def index_base(option=None):
    """--torch-index, else APSI_TORCH_INDEX, else [pkg] torch_index in apsi.toml, else PyTorch's own."""
    if option:
        return option.rstrip("/")
    if os.environ.get("APSI_TORCH_INDEX"):
        return os.environ["APSI_TORCH_INDEX"].rstrip("/")
    from pathlib import Path

    from apsi_lang import config
    from apsi_lang.errors import ConfigError

    try:
        cfg = config.load(Path.cwd())
    except ConfigError as e:
        fail(f"{e}")
    return cfg.torch_index or torch_builds.DEFAULT_INDEX_BASE


def say(text=""):
    click.echo(text)


def warn(text):
    click.echo(f"! {text}", err=True)


def fail(text, code=1):
    click.echo(f"error: {text}", err=True)
    raise Exit(code)


def install(req):
    """Carry out `apsi pkg install`; returns normally on success, raises click Exit otherwise."""
    builds = [n for n in req.names if n in torch_builds.BUILDS]
    plain = [n for n in req.names if n not in torch_builds.BUILDS]
    if len(builds) > 1:
        raise click.UsageError(f"name one PyTorch build at a time, not {' and '.join(builds)} "
                               "(there is only ever one PyTorch in Apsi's Python)")
    python = pipcmd.target_python()
    try:
        info = pipcmd.probe(python)
    except pipcmd.PipError as e:
        fail(e.message)
    if info.get("pip") is None:
        fail(f"pip is not installed in {python}: run `{python} -m ensurepip --upgrade`, then try again")
    try:
        if builds:
            build = torch_builds.BUILDS[builds[0]]
            _install_torch(req, build, python, info)
            plain = list(build.extras) + plain
        if plain:
            _install_plain(req, plain, python, info, with_index=not builds)
    except KeyboardInterrupt:
        state = _torch_state(python)
        fail(f"interrupted (Ctrl-C) before pip finished. {state}")


def _plan_for(req, build):
    if req.index_url:
        if build.index is None or build.index == "cpu":
            return torch_choice.Plan(index=None, requirement="torch",
                                     reason=f"torch from {req.index_url} (--index-url)"), req.index_url
        plan = torch_choice.explicit(build.index)
        return torch_choice.Plan(**{**plan.__dict__, "reason": f"{plan.reason}, from {req.index_url}"}), \
            req.index_url
    if build.index is None:
        from . import hardware

        req.hardware = hw = req.hardware or hardware.detect()
        plan = torch_choice.choose(hw)
        if plan.stop:
            say(f"{build.name}: {plan.reason}")
            fail(plan.stop)
        url = None if plan.default_index else f"{index_base(req.torch_index)}/{plan.index}"
        return plan, url
    plan = torch_choice.explicit(build.index)
    if torch_builds.INDEXES[build.index].kind == "cuda":     # only then is the hardware worth reading
        from . import hardware

        req.hardware = hw = req.hardware or hardware.detect()
        plan = torch_choice.Plan(**{**plan.__dict__, "warnings": torch_choice.explicit_warnings(hw, plan)})
    import platform

    if plan.index == "cpu" and platform.system() == "Darwin":
        plan = torch_choice.Plan(index="cpu", requirement=plan.requirement, first=plan.first,
                                 default_index=True, reason=plan.reason)
        return plan, None
    return plan, f"{index_base(req.torch_index)}/{plan.index}"


def _install_torch(req, build, python, info):
    plan, url = _plan_for(req, build)
    say(f"{build.name}: {plan.reason}" if build.index is None or build.extras else plan.reason)
    for w in plan.warnings:
        warn(w)
    torch = info["torch"]
    auto = build.index is None and plan.index is not None
    force = False
    if torch.get("found") and (auto or _matches(torch, plan)):
        checked = pipcmd.probe(python, import_torch=True)["torch"]
        if not checked.get("imported"):
            warn(f"the PyTorch in {python} does not import ({checked.get('import_error')}); "
                 "it will be reinstalled")
            force = True
        elif auto and _recent(checked):
            _report_existing(req, plan, checked, python)
            return
        elif _matches(checked, plan):
            say(f"PyTorch {checked['version']} is already installed in {python}; nothing to do.")
            return
    requirement = plan.requirement
    index_args = ["--index-url", url] if url else []
    download = pipcmd.pip_cmd(python, "download", "--no-deps", "--only-binary=:all:", "--dest",
                              "<temporary folder>", *index_args, requirement)
    install = pipcmd.pip_cmd(python, "install", *index_args, *(["--force-reinstall"] if force else []),
                             "<temporary folder>/torch-….whl")
    if req.dry_run:
        say(f"Would run, in {python}:")
        say(f"  {pipcmd.quote(download)}")
        say(f"  {pipcmd.quote(install)}")
        return
    before = _describe_torch(torch)
    tmp = tempfile.mkdtemp(prefix="apsi-pkg-")
    try:
        download[download.index("<temporary folder>")] = tmp
        say(f"Downloading {requirement}" + (f" from {url}" if url else "") + " …")
        rc, err = pipcmd.run_pip(download)
        if rc != 0:
            msg = pipcmd.explain_failure(err, requirement, url, info)
            fail(f"{msg}\nNothing was changed: {before}.")
        wheels = glob.glob(os.path.join(tmp, "torch-*.whl"))
        if not wheels:
            fail(f"pip downloaded no torch wheel for {requirement}; nothing was changed: {before}.")
        install[-1] = wheels[0]
        say(f"Installing {os.path.basename(wheels[0])} …")
        rc, err = pipcmd.run_pip(install)
        if rc != 0:
            msg = pipcmd.explain_failure(err, os.path.basename(wheels[0]), url, info)
            fail(f"{msg}\n{_torch_state(python)}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    after = pipcmd.probe(python)["torch"]
    say(f"Installed PyTorch {after.get('version')} ({_build_text(after)}) into {python}.")


def _report_existing(req, plan, torch, python):
    from . import hardware

    hw = req.hardware or hardware.detect()
    suits, why = torch_choice.suitability(hw, plan, torch)
    say(f"Found PyTorch {torch['version']} in {python}: {why}.")
    if suits:
        say("It is used as it is; nothing is downloaded.")
    else:
        say(f"It is kept as it is. To replace it: apsi pkg install {plan.name}")


def _install_plain(req, names, python, info, with_index):
    index_args = ["--index-url", req.index_url] if (req.index_url and with_index) else []
    cmd = pipcmd.pip_cmd(python, "install", *index_args, *names)
    if req.dry_run:
        say(f"Would run: {pipcmd.quote(cmd)}")
        return
    rc, err = pipcmd.run_pip(cmd)
    if rc != 0:
        fail(pipcmd.explain_failure(err, " ".join(names), req.index_url if index_args else None, info,
                                    torch=False))
    say(f"Installed {' '.join(names)} into {python}.")


def _recent(torch):
    from packaging.version import InvalidVersion, Version

    try:
        return Version(torch["version"]) >= Version(torch_builds.MIN_TORCH)
    except (InvalidVersion, TypeError, KeyError):
        return False


def _matches(torch, plan):
    """Whether an installed torch already is the build the plan asks for."""
    if plan.index is None or not torch.get("version"):
        return False
    from packaging.specifiers import SpecifierSet
    from packaging.version import InvalidVersion, Version

    try:
        v = Version(torch["version"])
    except InvalidVersion:
        return False
    spec = SpecifierSet(plan.requirement.removeprefix("torch"))
    in_range = Version(v.public) in spec
    return in_range and (torch_choice.installed_key(torch) == plan.index
                         or plan.default_index and not v.local)


def _build_text(torch):
    key = torch_choice.installed_key(torch)
    if torch.get("cuda"):
        return f"CUDA {torch['cuda']}"
    if torch.get("hip"):
        return f"ROCm {torch['hip']}"
    return {"xpu": "Intel XPU", "cpu": "CPU"}.get(key, key)


def _describe_torch(torch):
    if not torch.get("found"):
        return "PyTorch was not installed before and still is not"
    return f"PyTorch {torch.get('version')} ({_build_text(torch)}) is still installed"


def _torch_state(python):
    try:
        torch = pipcmd.probe(python)["torch"]
    except pipcmd.PipError:
        return "Check what is installed with `apsi pkg list`."
    if not torch.get("found"):
        return "PyTorch is not installed now; run the command again when the problem is fixed."
    return f"PyTorch {torch.get('version')} ({_build_text(torch)}) is installed now."
