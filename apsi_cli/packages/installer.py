"""`apsi pkg install`: turn names into a plan, tell the user, and carry it out with pip.

A PyTorch build is installed in two steps so that a failure never leaves a broken install behind:
1. `pip download --no-deps` the torch wheel into a temporary folder (a missing wheel or a network
   failure stops here, with the old build untouched); the wheel's build tag (+cu126, +cpu, …) is
   checked against the build announced;
2. `pip install` that wheel file together with torchvision / torchaudio (those installed or asked
   for) at the versions paired with it, from the same index; pip swaps the old family for the new one.
Both steps run with pip's configuration files and index variables set aside (connection settings are
kept), so an extra index or find-links folder cannot slip a different wheel in. The build installed is
checked afterwards. Packages that are not PyTorch are installed with the installed build pinned (a pip
constraint), so they can never replace it.
"""

import glob
import os
import shutil
import sys
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
    yes: bool = False                     # --yes: accept a replacement or an index from apsi.toml
    hardware: object = None               # for tests and the setup wizard: skip detection


def index_source(option=None):
    """(base URL of the PyTorch indexes, where it was set): --torch-index, else APSI_TORCH_INDEX,
    else [pkg] torch_index in the nearest apsi.toml, else PyTorch's own. Not a URL: fail, exit 2."""
    base, source = index_setting(option)
    problem = index_problem(base, source)
    if problem:
        fail(problem, code=2)
    return base, source


def index_problem(url, source):
    """Why `url` cannot be a package index, or None. An index is an http(s) or file URL: pip ignores
    anything else with a warning, and the failure then read 'no wheel matches this Python'
    (`--torch-index notaurl`)."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.scheme in ("http", "https", "file") and (parts.netloc or parts.scheme == "file"):
        return None
    return (f"{source}: {url!r} is not the URL of a package index: give one that starts with https:// "
            f"(or file:// for a folder on this machine), like {torch_builds.DEFAULT_INDEX_BASE}")


def index_setting(option=None):
    """index_source's answer, unchecked (the doctor shows a bad one)."""
    env = os.environ.get("APSI_TORCH_INDEX")
    if option and option != env:
        return option.rstrip("/"), "--torch-index"
    if env:
        return os.environ["APSI_TORCH_INDEX"].rstrip("/"), "APSI_TORCH_INDEX"
    from pathlib import Path

    from apsi_lang import config
    from apsi_lang.errors import ConfigError

    try:
        cfg = config.load(Path.cwd())
    except ConfigError as e:
        fail(f"{e}")
    if cfg.torch_index:
        return cfg.torch_index, f"[pkg] torch_index in {cfg.path}"
    return torch_builds.DEFAULT_INDEX_BASE, "PyTorch's own index"


def say(text=""):
    click.echo(text)


def warn(text):
    click.echo(f"! {text}", err=True)


def fail(text, code=1):
    click.echo(f"error: {text}", err=True)
    raise Exit(code)


def install(req):
    """Carry out `apsi pkg install`; returns normally on success, raises click Exit otherwise."""
    for name in req.names:
        _refuse_build_lookalike(name)
    problem = req.index_url and index_problem(req.index_url, "--index-url")
    if problem:
        fail(problem, code=2)
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
    _check_pep668(req, info, python)
    family = [n for n in plain if _bare(n) in torch_builds.FAMILY]
    plain = [n for n in plain if n not in family]
    if family and not builds and not info["torch"].get("found"):
        say(f"{', '.join(family)} needs PyTorch, which is not installed: torch-auto chooses the build, "
            "and they come from the same index.")
        builds = ["torch-auto"]
    try:
        if builds:
            build = torch_builds.BUILDS[builds[0]]
            _install_torch(req, build, python, info, family)
            plain = list(build.extras) + plain
        elif family:
            _install_family_only(req, family, python, info)
        if plain:
            _install_plain(req, plain, python, with_index=not builds)
    except KeyboardInterrupt as e:
        from apsi_lang import signals

        if req.dry_run:
            fail(f"{signals.describe(e)}; nothing was changed (dry run)", code=signals.exit_code(e))
        fail(f"{signals.describe(e)} before pip finished. {_torch_state(python)}", code=signals.exit_code(e))


# names shaped like a PyTorch build (torch-cu121, torch-cpu, torch-rocm6, torch-gpu): one that is not
# in the table went to pip as an ordinary package, from PyPI, where anyone may have published it.
# torch-geometric, torch-scatter and the like do not match and stay ordinary packages.
_BUILD_SHAPE = r"torch[-_](cu\d*|cuda.*|rocm.*|cpu|gpu|xpu.*|mps|metal|auto.*|nightly)"


def _refuse_build_lookalike(name):
    import difflib
    import re

    if name in torch_builds.BUILDS or not re.fullmatch(_BUILD_SHAPE, name.lower()):
        return
    known = [n for n in torch_builds.BUILDS if n.startswith("torch")]
    close = difflib.get_close_matches(name.lower(), known, n=2, cutoff=0.7)
    meant = {"torch-cpu": " (the CPU build is named torch)",
             "torch-gpu": " (torch-auto picks the build for this machine's GPU)"}.get(
        name.lower().replace("_", "-"), f" (did you mean {' or '.join(close)}?)" if close else "")
    raise click.UsageError(f"{name} is not a PyTorch build Apsi knows{meant}, and it is not installed "
                           f"from the package index as an ordinary package either, where anyone could "
                           f"have published that name. The builds: {', '.join(known)}; "
                           f"`apsi pkg install torch-auto` picks the one for this machine.")


def _bare(name):
    """'torchvision==0.22.*' -> 'torchvision'."""
    import re

    return re.split(r"[<>=!~\[; ]", name, maxsplit=1)[0].lower().replace("_", "-")


def pep668_advice(python):
    return ("Use a virtual environment, which Apsi then installs into (on Debian and Ubuntu, "
            "`sudo apt install python3-venv` first):\n"
            f"  {python} -m venv ~/.venvs/apsi\n"
            "  ~/.venvs/apsi/bin/python -m pip install apsi     (or the folder of your Apsi checkout)\n"
            "  ~/.venvs/apsi/bin/python -m apsi pkg install torch-auto\n"
            "(or set PIP_BREAK_SYSTEM_PACKAGES=1 if you accept pip changing the system's packages)")


def _check_pep668(req, info, python):
    """An externally managed Python (PEP 668) refuses pip installs: say so before downloading."""
    if not info.get("externally_managed") or _truthy(os.environ.get("PIP_BREAK_SYSTEM_PACKAGES")):
        return
    text = (f"{python} is externally managed (PEP 668: {info.get('marker')}): its packages belong to "
            "the system's package manager, and pip refuses to install into it.")
    if req.dry_run:
        warn(f"{text} The plan below would be refused. {pep668_advice(python)}")
        return
    fail(f"{text} Nothing was downloaded. {pep668_advice(python)}")


def _truthy(value):
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


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
        return plan, None if plan.default_index else _index_url(req, plan.index)
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
    return plan, _index_url(req, plan.index)


def _index_url(req, key):
    base, _ = index_source(req.torch_index)
    return f"{base}/{key}"


def _announce_index(req):
    """Show where PyTorch comes from when it is not PyTorch's own index. One set by an apsi.toml (which
    may come with a cloned repository) needs --yes or a confirmation before anything is downloaded."""
    base, source = index_source(req.torch_index)
    if base == torch_builds.DEFAULT_INDEX_BASE:
        return
    say(f"PyTorch and its dependencies come from {base} ({source}), not from PyTorch's own index.")
    if not source.startswith("[pkg]") or req.dry_run or req.yes:
        return
    if sys.stdin.isatty() and click.confirm("Download from this index?", default=False):
        return
    fail(f"not downloading from {base}: it was set by {source}. If you trust it, run the command again "
         "with --yes; otherwise remove that key (or use --torch-index "
         f"{torch_builds.DEFAULT_INDEX_BASE}).")


def _install_torch(req, build, python, info, family):
    plan, url = _plan_for(req, build)
    say(f"{build.name}: {plan.reason}" if build.index is None or build.extras else plan.reason)
    for w in plan.warnings:
        warn(w)
    torch = info["torch"]
    auto = build.index is None and plan.index is not None
    force = False
    members = [m for m in torch_builds.FAMILY if info.get("family", {}).get(m)
               or any(_bare(f) == m for f in family)]
    if torch.get("found") and (auto or _matches(torch, plan)):
        checked = pipcmd.probe(python, import_torch=True)["torch"]
        if not checked.get("imported"):
            warn(f"the PyTorch in {python} does not import ({checked.get('import_error')}); "
                 "it will be reinstalled")
            force = True
        elif auto and _recent(checked):
            if _keep_existing(req, plan, checked, python):
                if family:
                    _install_family_only(req, family, python, info)
                return
        elif _matches(checked, plan):
            if family:
                _install_family_only(req, family, python, info)
            else:
                say(f"PyTorch {checked['version']} is already installed in {python}; nothing to do.")
            return
    if url:
        _announce_index(req)
    env, dropped = pipcmd.isolated_env(python)
    requirement = plan.requirement
    index_args = ["--index-url", url] if url else []
    download = pipcmd.pip_cmd(python, "download", "--no-deps", "--only-binary=:all:", "--dest",
                              "<temporary folder>", *index_args, requirement)
    pins = [f"{m}==<paired>" for m in members]
    install = pipcmd.pip_cmd(python, "install", *index_args, *(["--force-reinstall"] if force else []),
                             "<temporary folder>/torch-….whl", *pins)
    if req.dry_run:
        say(f"Would run, in {python}:")
        say(f"  {pipcmd.quote(download)}")
        say(f"  {pipcmd.quote(install)}")
        if dropped:
            say(f"  (without {', '.join(dropped)}: only the index above is used)")
        return
    before = _describe_torch(torch)
    tmp = tempfile.mkdtemp(prefix="apsi-pkg-")
    try:
        download[download.index("<temporary folder>")] = tmp
        say(f"Downloading {requirement}" + (f" from {url}" if url else "") + " …")
        if dropped:
            say(f"(pip runs without {', '.join(dropped)}, so only that index is used)")
        rc, err = pipcmd.run_pip(download, env=env)
        if rc != 0:
            msg = pipcmd.explain_failure(err, requirement, url, info)
            fail(f"{msg}\nNothing was changed: {before}.")
        wheels = glob.glob(os.path.join(tmp, "torch-*.whl"))
        if not wheels:
            fail(f"pip downloaded no torch wheel for {requirement}; nothing was changed: {before}.")
        wheel = wheels[0]
        version = _wheel_version(wheel)
        expected = _expected_key(plan)
        if expected and _tag_key(version) != expected:
            fail(f"the index {url} offered {os.path.basename(wheel)}, which is not a {plan.name} build "
                 f"(its tag is +{version.partition('+')[2] or 'none'}); nothing was changed: {before}. "
                 "Check that the index (or mirror) keeps each build in its own folder.")
        install[install.index("<temporary folder>/torch-….whl")] = wheel
        install[len(install) - len(pins):] = [torch_builds.family_pin(m, version) for m in members]
        say(f"Installing {os.path.basename(wheel)}"
            + (f" with {', '.join(install[len(install) - len(pins):])}" if pins else "") + " …")
        rc, err = pipcmd.run_pip(install, env=env)
        if rc != 0:
            msg = pipcmd.explain_failure(err, os.path.basename(wheel), url, info)
            fail(f"{msg}\n{_torch_state(python)}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    _verify(python, plan, version, expected, url, pipcmd.torch_conflicts(err))


def _wheel_version(path):
    """'…/torch-2.6.0+cu126-cp312-….whl' -> '2.6.0+cu126'."""
    from urllib.parse import unquote

    return unquote(os.path.basename(path)).split("-")[1]


def _expected_key(plan):
    """The build tag the installed wheel must carry, or None when any will do (--index-url, PyPI)."""
    if plan.index is None or plan.default_index:
        return None
    return plan.index


def _tag_key(version):
    local = version.partition("+")[2]
    return local or "cpu"


def _verify(python, plan, version, expected, url, conflicts=()):
    """Check what pip left behind: the build announced, and a family that matches it. `conflicts`: the
    packages pip said (exit code 0, an ERROR line) need another PyTorch; they are named, not hidden."""
    after = pipcmd.probe(python)
    torch = after["torch"]
    got = torch_choice.installed_key(torch) if torch.get("found") else None
    if expected and (got != expected or (torch.get("version") or "").split("+")[0] != version.split("+")[0]):
        fail(f"pip reported success, but the PyTorch in {python} is now {torch.get('version')} ({got}), "
             f"not the {version} ({expected}) wheel Apsi downloaded from {url}. Run "
             f"`apsi pkg install {plan.name}` again; if it repeats, `apsi pkg uninstall torch` first.")
    bad = _family_mismatch(torch.get("version") or version, after.get("family", {}))
    if bad:
        fail(f"PyTorch {torch.get('version')} is installed, but {bad}. Install the family together: "
             f"`apsi pkg install {plan.name} torchvision torchaudio`.")
    for name, needs in conflicts:
        warn(f"{name} needs {needs}, and PyTorch is now {torch.get('version')} (pip's dependency "
             f"resolver said so above): it may not work. Update it with `apsi pkg install {name.split()[0]}`"
             f" (the build stays), or remove it with `apsi pkg uninstall {name.split()[0]}`")
    members = [f"{m} {v}" for m, v in after.get("family", {}).items() if v]
    say(f"Installed PyTorch {torch.get('version')} ({_build_text(torch)})"
        + (f" with {', '.join(members)}" if members else "") + f" into {python}.")


def family_mismatch(torch_version, family):
    return _family_mismatch(torch_version, family)


def _family_mismatch(torch_version, family):
    """A sentence naming torchvision/torchaudio versions that do not pair with torch_version, or ""."""
    torch_tag = torch_version.partition("+")[2]
    wrong = []
    for name, v in (family or {}).items():
        if not v:
            continue
        tag = v.partition("+")[2]
        pin = torch_builds.family_pin(name, torch_version).split("==")[1].rstrip(".*")
        if not torch_builds.family_pairs(name, v, torch_version):
            wrong.append(f"{name} {v} belongs to another PyTorch (this one pairs with {name} {pin})")
        elif not torch_builds.family_builds_match(name, v, torch_version):
            wrong.append(f"{name} {v} is a {tag} build, PyTorch a {torch_tag} one")
    return "; ".join(wrong)


def _keep_existing(req, plan, torch, python):
    """torch-auto found a PyTorch 2.3+: keep it if it suits; otherwise say what would replace it and
    replace it with --yes (or a confirmation). Returns True when it is kept."""
    from . import hardware

    hw = req.hardware or hardware.detect()
    suits, why = torch_choice.suitability(hw, plan, torch)
    say(f"Found PyTorch {torch['version']} in {python}: {why}.")
    if suits:
        say("It is used as it is; nothing is downloaded.")
        return True
    say(f"torch-auto would install {plan.summary} in its place.")
    if req.dry_run or req.yes:
        return False
    if sys.stdin.isatty() and click.confirm("Replace it?", default=True):
        return False
    fail(f"nothing was installed, and PyTorch {torch['version']} does not suit this machine. To replace it, "
         "run `apsi pkg install torch-auto --yes`.")


def _install_family_only(req, family, python, info):
    """torchvision / torchaudio for the PyTorch already installed: from its index, at the paired
    versions, with PyTorch itself pinned."""
    torch = info["torch"]
    version = torch.get("metadata_version") or torch.get("version")
    key = torch_choice.installed_key(torch)
    url = None if "+" not in version else (req.index_url or _index_url(req, key))
    pins = [torch_builds.family_pin(_bare(f), version) if _bare(f) == f else f for f in family]
    tmp = tempfile.mkdtemp(prefix="apsi-pkg-")
    try:
        keep = pipcmd.constraint_file(tmp, version)
        cmd = pipcmd.pip_cmd(python, "install", *(["--index-url", url] if url else []), "-c", keep, *pins)
        say(f"{', '.join(pins)}: paired with the installed PyTorch {version}"
            + (f", from {url}" if url else "") + ".")
        if req.dry_run:
            say(f"Would run: {pipcmd.quote(cmd)}   (the constraint file holds torch=={version})")
            return
        if url:
            _announce_index(req)
        env, _ = pipcmd.isolated_env(python) if url else (None, [])
        rc, err = pipcmd.run_pip(cmd, env=env)
        if rc != 0:
            fail(pipcmd.explain_failure(err, " ".join(pins), url, info, torch=False, torch_index=bool(url)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    after = pipcmd.probe(python)
    bad = _family_mismatch(after["torch"].get("version") or version, after.get("family", {}))
    if bad:
        fail(f"{bad}. Install the family together: `apsi pkg install torch-auto torchvision torchaudio`.")
    say(f"Installed {', '.join(f'{m} {v}' for m, v in after['family'].items() if v)} into {python}.")


def _install_plain(req, names, python, with_index):
    """Ordinary packages, with the installed PyTorch pinned so that none of them can replace it."""
    info = pipcmd.probe(python)
    torch = info["torch"]
    keep_version = torch.get("metadata_version") if torch.get("found") else None
    index_args = ["--index-url", req.index_url] if (req.index_url and with_index) else []
    tmp = tempfile.mkdtemp(prefix="apsi-pkg-")
    try:
        keep = ["-c", pipcmd.constraint_file(tmp, keep_version)] if keep_version else []
        cmd = pipcmd.pip_cmd(python, "install", *index_args, *keep, *names)
        if req.dry_run:
            note = f"   (the constraint file holds torch=={keep_version})" if keep else ""
            say(f"Would run: {pipcmd.quote(cmd)}{note}")
            return
        rc, err = pipcmd.run_pip(cmd)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if rc != 0:
        fail(pipcmd.explain_failure(err, " ".join(names), req.index_url if index_args else None, info,
                                    torch=False))
    say(f"Installed {' '.join(names)} into {python}"
        + (f"; PyTorch {keep_version} was kept as it is." if keep_version else "."))


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
