"""`apsi doctor`: one report on this machine's setup, each line ✓, ! or ✗ with a fix.

Fast and offline: nvidia-smi (with a timeout), one subprocess of Apsi's Python that imports torch (so a
broken PyTorch cannot crash the doctor), NumPy's build information. Exit code 1 when something is broken.
"""

import os
import platform
import sys
from pathlib import Path

import click

OK, WARN, FAIL, INFO = "ok", "warn", "fail", "info"
SYMBOL = {OK: "✓", WARN: "!", FAIL: "✗", INFO: "✓"}


class Report:
    def __init__(self):
        self.sections = {}
        self.checks = []

    def check(self, key, label, status, detail, fix=None):
        self.checks.append({"key": key, "label": label, "status": status, "detail": detail, "fix": fix})

    @property
    def ok(self):
        return all(c["status"] != FAIL for c in self.checks)

    def as_dict(self):
        return {"ok": self.ok, **self.sections, "checks": self.checks}


def collect(perms=None):
    """Build the report (a Report); never raises."""
    from .packages import hardware, pipcmd, torch_choice

    r = Report()
    _apsi(r)
    _modules(r)
    python = pipcmd.target_python()
    try:
        info = pipcmd.probe(python, import_torch=True)
    except pipcmd.PipError as e:
        info = None
        r.sections["python"] = {"executable": python, "version": None, "pip": None}
        r.check("python", "Python", FAIL, e.message, "reinstall Apsi")
    if info:
        _python(r, info)
    _platform(r)
    _numpy(r)
    hw = hardware.detect()
    _hardware(r, hw)
    torch = (info or {}).get("torch", {"found": False})
    _torch(r, torch, hw)
    _family(r, torch, (info or {}).get("family", {}), hw)
    plan = torch_choice.choose(hw)
    _recommendation(r, plan, torch, hw)
    _index(r)
    _config(r, perms or {})
    _leftovers(r)
    _confinement(r)
    return r


def _apsi(r):
    from importlib.metadata import PackageNotFoundError, version

    try:
        v = version("apsi")
    except PackageNotFoundError:
        v = "source checkout"
    r.sections["apsi"] = {"version": v, "location": str(Path(__file__).resolve().parent.parent)}
    r.check("apsi", "Apsi", OK, f"apsi {v}")


SHIPPED = ("nn", "layers", "plot", "units", "web")    # the modules Apsi itself provides


def _modules(r):
    """The modules `use NAME` can load from installed packages (the apsi.modules entry points), as a
    program in the current folder finds them; Apsi's own must be among them."""
    from apsi_lang.installed import entry_points

    found, broken = [], []
    eps = entry_points("apsi.modules")
    for ep in sorted(eps.values(), key=lambda e: e.name):
        try:
            ep.load()
            found.append(ep.name)
        except Exception as e:
            broken.append(f"{ep.name} ({ep.value}: {type(e).__name__}: {e})")
    missing = [n for n in SHIPPED if n not in eps]
    r.sections["modules"] = {"available": found, "broken": broken, "missing": missing}
    if missing:
        why, fix = _why_missing(missing)
        r.check("modules", "Modules", FAIL, f"`use {', '.join(missing)}` cannot find "
                f"{'it' if len(missing) == 1 else 'them'} for a program in this folder: {why}", fix)
    if broken:
        r.check("modules", "Modules", FAIL, "`use` cannot load: " + "; ".join(broken),
                "reinstall the package that provides it (for nn: reinstall Apsi)")
    elif not missing:
        r.check("modules", "Modules", OK, "use " + ", ".join(found))


def _why_missing(missing):
    """Why Apsi's own modules are not found, and the fix: installed only where `use` does not look
    (under the current or project folder, outside this Python's environment), or not installed."""
    from importlib.metadata import distributions

    from apsi_lang.installed import search_path

    searched = {os.path.realpath(p or ".") for p in search_path()}
    ignored = []
    for dist in distributions():
        if any(ep.group == "apsi.modules" and ep.name in missing for ep in dist.entry_points):
            where = os.path.realpath(str(dist.locate_file("")))
            if where not in searched:
                ignored.append(_shown(os.path.join(where, _meta_folder(dist))))
    install = f"{sys.executable} -m pip install -e <your Apsi checkout>"
    if ignored:
        return (f"Apsi's metadata is only in {', '.join(dict.fromkeys(ignored))}, under the current or "
                "project folder, which `use` does not search (a program can write there; only this "
                f"Python's environment, {sys.prefix}, is trusted)", f"install Apsi into it: {install}")
    return (f"no installed package provides {'it' if len(missing) == 1 else 'them'} in this Python "
            f"({sys.executable}): Apsi runs from its sources without being installed here",
            f"install it: {install} (or run the `apsi` of the environment it is installed in)")


def _meta_folder(dist):
    path = getattr(dist, "_path", None)        # PathDistribution's folder: x.dist-info / x.egg-info
    return os.path.basename(str(path)) if path else ""


def _shown(path):
    """A path relative to the current folder when inside it."""
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def _python(r, info):
    py = info["python"]
    managed = bool(info.get("externally_managed"))
    r.sections["python"] = {**py, "pip": info.get("pip"), "externally_managed": managed}
    r.check("python", "Python", OK, f"{py['executable']} (Python {py['version']})")
    if managed and os.environ.get("PIP_BREAK_SYSTEM_PACKAGES", "").lower() not in ("1", "true", "yes", "on"):
        r.check("pep668", "PEP 668", WARN, f"{py['executable']} is externally managed "
                f"({info.get('marker')}): `apsi pkg` cannot install into it",
                f"use a virtual environment: {py['executable']} -m venv ~/.venvs/apsi, then run Apsi "
                "from it")
    else:
        r.check("pep668", "PEP 668", OK, "pip may install into this Python"
                + (" (PIP_BREAK_SYSTEM_PACKAGES is set)" if managed else " (not externally managed)"))
    if info.get("pip"):
        r.check("pip", "pip", OK, f"pip {info['pip']}")
    else:
        broken = f"pip is broken in {py['executable']} ({info['pip_error']})" if info.get("pip_error") \
            else f"pip is missing in {py['executable']}"
        r.check("pip", "pip", FAIL, f"{broken}; `apsi pkg` needs it",
                f"{py['executable']} -m ensurepip --upgrade")


def _platform(r):
    from .packages.hardware import others

    system = platform.system()
    wsl = system == "Linux" and others.is_wsl()
    r.sections["platform"] = {"system": system, "release": platform.release(), "machine": platform.machine(),
                              "wsl": wsl}
    r.check("platform", "Platform", OK,
            f"{system} {platform.release()} {platform.machine()}" + (" (WSL)" if wsl else ""))


def _numpy(r):
    try:
        import numpy
    except ImportError as e:
        r.sections["numpy"] = {"version": None}
        r.check("numpy", "NumPy", FAIL, f"NumPy does not import: {e}",
                f"{sys.executable} -m pip install --force-reinstall numpy")
        return
    blas = _blas(numpy)
    threads = _threads()
    r.sections["numpy"] = {"version": numpy.__version__, "blas": blas, "threads": threads}
    r.check("numpy", "NumPy", OK, f"NumPy {numpy.__version__}, BLAS {blas or 'unknown'}, {threads} threads")


def _blas(numpy):
    try:
        cfg = numpy.show_config(mode="dicts")
        b = cfg["Build Dependencies"]["blas"]
        return f"{b.get('name')} {b.get('version', '')}".strip()
    except Exception:
        return None


def _threads():
    try:
        from threadpoolctl import threadpool_info

        blas = [p for p in threadpool_info() if p.get("user_api") == "blas"]
        if blas:
            return int(blas[0]["num_threads"])
    except Exception:
        pass
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        if os.environ.get(var, "").isdigit():
            return int(os.environ[var])
    return os.cpu_count() or 1


def _hardware(r, hw):
    nv = hw.nvidia
    r.sections["hardware"] = {
        "nvidia": {"status": nv.status, "driver": nv.driver, "cuda_driver_api": nv.cuda_driver_api,
                   "source": nv.source, "note": nv.note, "fix": nv.fix or None, "lost": list(nv.lost),
                   "gpus": [_gpu(g) for g in nv.gpus]},
        "amd": [_gpu(g) for g in hw.amd],
        "intel": [_gpu(g) for g in hw.intel],
        "mps": hw.apple_mps,
        "wsl": hw.wsl,
    }
    if hw.override_error:
        r.check("overrides", "Overrides", FAIL, hw.override_error, "correct or unset the variable")
    elif hw.overrides:
        r.check("overrides", "Overrides", INFO, "; ".join(hw.overrides)
                + ": torch-auto assumes these instead of what it detects")
    if nv.status == "ok" or nv.status == "driver-only":
        gpus = "; ".join(f"{g.describe()}" + (f", {g.memory_mib / 1024:.0f} GiB" if g.memory_mib else "")
                         for g in nv.gpus) or "GPU models unknown"
        api = f" (runs CUDA ≤ {nv.cuda_driver_api})" if nv.cuda_driver_api else ""
        r.check("gpu", "NVIDIA", OK if nv.gpus else WARN, f"driver {nv.driver}{api}: {gpus}",
                None if nv.gpus else (nv.fix or "install or repair nvidia-smi (it comes with the driver)"))
        if nv.lost:
            r.check("gpu", "NVIDIA", FAIL, nv.note, nv.fix)
    elif nv.status in ("not-loaded", "mismatch", "timeout"):
        r.check("gpu", "NVIDIA", FAIL, nv.note, nv.fix)
    elif nv.status in ("no-devices", "error"):
        r.check("gpu", "NVIDIA", WARN, nv.note, nv.fix or None)
    if hw.jetson:
        r.check("gpu", "Jetson", INFO, hw.jetson)
    for g in hw.amd:
        r.check("gpu", "AMD", OK, g.describe())
    for g in hw.intel:
        r.check("gpu", "Intel", OK, g.describe())
    if hw.apple_mps:
        r.check("gpu", "Apple", OK, "Apple silicon GPU (MPS)")
    if not hw.gpus and not hw.apple_mps and nv.status == "absent":
        r.check("gpu", "GPU", INFO, "none found: NumPy and PyTorch run on the CPU")


def _gpu(g):
    return {"name": g.name, "vendor": g.vendor, "compute_cap": g.compute_cap_text if g.vendor == "nvidia"
            else None, "compute_cap_source": g.compute_cap_source or None, "arch": g.arch or None,
            "memory_mib": g.memory_mib}


def _torch(r, torch, hw):
    from .packages import torch_choice

    section = {k: torch.get(k) for k in ("found", "version", "cuda", "hip", "cudnn", "location",
                                          "imported", "import_error")}
    section["build"] = torch_choice.installed_key(torch) if torch.get("found") else None
    section["family"] = {}
    section["devices"] = torch.get("devices", [])
    r.sections["torch"] = section
    if not torch.get("found"):
        r.check("torch", "PyTorch", WARN, "not installed (optional: the torch backend needs it)",
                "apsi pkg install torch-auto")
        return
    if not torch.get("imported"):
        r.check("torch", "PyTorch", FAIL, f"{torch.get('version') or 'PyTorch'} is installed but does not "
                f"import: {torch.get('import_error')}", f"apsi pkg install {_plan_name(hw)}")
        return
    parts = [torch["version"]]
    if torch.get("cuda"):
        parts.append(f"CUDA {torch['cuda']}")
    if torch.get("hip"):
        parts.append(f"ROCm {torch['hip']}")
    if torch.get("cudnn"):
        parts.append(f"cuDNN {torch['cudnn']}")
    r.check("torch", "PyTorch", OK, ", ".join(parts))
    devices = torch.get("devices", [])
    names = "; ".join(f"{d['name']} {d.get('model', '')}".strip() +
                      (f", {d['memory_gib']} GiB" if d.get("memory_gib") else "") for d in devices)
    gpu_build = bool(torch.get("cuda") or torch.get("hip"))
    if gpu_build and not devices and hw.gpus:
        r.check("devices", "Devices", FAIL, "PyTorch is a GPU build but sees no GPU",
                "check the driver (`nvidia-smi`), or install the build `apsi pkg install torch-auto` "
                "chooses for this machine")
    else:
        r.check("devices", "Devices", OK, ("cpu; " + names) if names else "cpu")


def _family(r, torch, family, hw):
    """torchvision / torchaudio: their versions, and whether they belong to the installed PyTorch."""
    from .packages import installer

    installed = {k: v for k, v in (family or {}).items() if v}
    r.sections["torch"]["family"] = dict(family or {})
    if not installed:
        return
    names = ", ".join(f"{k} {v}" for k, v in installed.items())
    if not torch.get("found") or not torch.get("version"):
        r.check("family", "torchvision/audio", FAIL, f"{names} installed without PyTorch",
                f"apsi pkg install {_plan_name(hw)} " + " ".join(installed))
        return
    bad = installer.family_mismatch(torch["version"], installed)
    if bad:
        r.check("family", "torchvision/audio", FAIL, f"{bad} (PyTorch {torch['version']})",
                f"apsi pkg install {_plan_name(hw)} " + " ".join(installed))
    else:
        r.check("family", "torchvision/audio", OK, f"{names} (paired with PyTorch {torch['version']})")


def _index(r):
    """Where `apsi pkg` takes PyTorch from, and what set it."""
    from apsi_lang.errors import ConfigError

    from .packages import installer, torch_builds

    try:
        url, source = _quiet(installer.index_setting)
    except (ConfigError, SystemExit, click.exceptions.Exit):
        r.sections["index"] = {"url": None, "source": None}
        return
    r.sections["index"] = {"url": url, "source": source}
    problem = installer.index_problem(url, source)
    if problem:
        r.check("index", "PyTorch index", FAIL, problem, "set it to an index's URL, or unset it")
    elif source.startswith("[pkg]") and url != torch_builds.DEFAULT_INDEX_BASE:
        r.check("index", "PyTorch index", WARN, f"{url} ({source}), not PyTorch's own: `apsi pkg install` "
                "asks before downloading from it", "remove the key unless you trust that index")
    else:
        r.check("index", "PyTorch index", INFO, f"{url} ({source})")


def _quiet(fn):
    import contextlib
    import io

    with contextlib.redirect_stderr(io.StringIO()):
        return fn()


def _plan_name(hw):
    from .packages import torch_choice

    plan = torch_choice.choose(hw)
    return plan.name if plan.index else "torch-auto"


def _recommendation(r, plan, torch, hw):
    from .packages import torch_choice

    fix = None
    section = {"build": plan.name if plan.index else None, "summary": plan.summary if plan.index else None,
               "reason": plan.reason, "warnings": list(plan.warnings), "stop": plan.stop,
               "installed": None, "suits": None, "fix": None}
    if plan.index is None:
        r.check("choice", "Best build", WARN, plan.reason, plan.stop)
    elif torch.get("found") and torch.get("version"):
        suits, why = torch_choice.suitability(hw, plan, torch)
        section["installed"] = torch_choice.installed_key(torch)
        section["suits"] = suits
        if suits:
            r.check("choice", "Best build", OK, f"{why}; torch-auto would choose {plan.summary}")
        else:
            fix = f"apsi pkg install {plan.name}"
            r.check("choice", "Best build", WARN, f"{why}; torch-auto would choose {plan.summary}", fix)
    else:
        fix = f"apsi pkg install {plan.name}"
        r.check("choice", "Best build", INFO, f"torch-auto would choose {plan.summary}", fix)
    for w in plan.warnings:
        r.check("choice", "Best build", WARN, w)
    section["fix"] = fix
    r.sections["recommendation"] = section


def _config(r, perms):
    from apsi_lang import config
    from apsi_lang.errors import ConfigError
    from apsi_lang.permissions import PERMISSIONS

    flags, by_flags = _flag_grants(perms)
    try:
        cfg = config.load(Path.cwd())
    except ConfigError as e:
        r.sections["config"] = {"path": None, "error": str(e), "allow": [], "torch_index": None}
        r.sections["permissions"] = {"known": list(PERMISSIONS), "granted": [], "flags": flags}
        r.check("config", "apsi.toml", FAIL, str(e), "fix the key it names (docs/permissions.md)")
        return
    granted = list(cfg.allow)
    r.sections["config"] = {"path": str(cfg.path) if cfg.path else None, "error": None, "allow": granted,
                            "read": list(cfg.read), "write": list(cfg.write),
                            "torch_index": cfg.torch_index, "warnings": list(cfg.warnings)}
    r.sections["permissions"] = {"known": list(PERMISSIONS), "granted": granted, "flags": flags}
    if cfg.path:
        from apsi_lang import trust

        state = cfg.trust           # of the bytes load() parsed, not of a second read
        r.sections["config"]["trust"] = state
        if state == trust.TRUSTED:
            r.check("config", "apsi.toml", OK, f"{cfg.path} (trusted)")
        else:
            r.check("config", "apsi.toml", WARN, f"{cfg.path} ({state}: it grants nothing)",
                    f"review it and run: apsi trust {cfg.path.parent}")
    else:
        r.check("config", "apsi.toml", INFO,
                f"none in {Path.cwd()} or above: permissions come from flags only", "apsi setup writes one")
    for w in cfg.warnings:
        if "apsi trust" not in w:           # the trust state has its own row above
            r.check("config", "apsi.toml", WARN, w, "remove or correct the key")
    _flag_problems(r, perms)
    others = [p for p in PERMISSIONS if p not in granted and p not in by_flags]
    detail = f"granted by apsi.toml: {', '.join(granted) or 'none'}"
    if cfg.read or cfg.write:
        detail += f"; read paths: {len(cfg.read)}, write paths: {len(cfg.write)}"
    if flags:
        detail += f"; by flags: {', '.join(flags)}"
    detail += f"; not granted: {', '.join(others) or 'none'}"
    r.check("permissions", "Permissions", INFO, detail)


def _flag_problems(r, perms):
    """A permission flag a run would refuse (`--allow-read=` with nothing after it, a URL for a host)
    is marked here too: the report is of what a program run with these flags would get."""
    from .guard import FlagError
    from .runner import _check_scope

    for key, value in sorted(perms.items()):
        try:
            _check_scope("--" + key.replace("_", "-"), value)
        except FlagError as e:
            r.check("permissions", "Permission flags", FAIL, str(e), "correct the flag (docs/permissions.md)")


def _flag_grants(perms):
    """(what the flags say, one entry each, e.g. "python", "read (for /data)", "deny-net"; the
    permissions they grant, whole or in part) from the permission flags' values."""
    from apsi_lang.permissions import PERMISSIONS

    if perms.get("allow_all"):
        return ["all"], set(PERMISSIONS)
    said, grants = [], set()
    for key, value in sorted(perms.items()):
        if not value:
            continue
        verb, _, name = key.partition("_")
        if verb == "allow":
            grants.add(name)
            said.append(name if value is True or value == "*" else f"{name} (for {value})")
        else:
            said.append(f"{verb}-{name}" + ("" if value is True or value == "*" else f" (for {value})"))
    return said, grants


def _leftovers(r):
    """Temporary files of atomic writes whose writer was killed (kill -9, a power cut): the next write
    of the same file removes them; until then the doctor lists them (apsi_lang/files.py)."""
    from apsi_lang import config, files

    found = config.find(Path.cwd())
    root = found.parent if found else Path.cwd()
    left = files.leftovers(root)
    if not left:
        r.check("leftovers", "Temporary files", OK, f"none left by interrupted writes in {root}")
        return
    shown = "; ".join(f"{p} ({size / 2**20:.1f} MB)" for p, size in left[:5])
    more = f" and {len(left) - 5} more" if len(left) > 5 else ""
    r.check("leftovers", "Temporary files", WARN,
            f"{len(left)} left by writes that were cut off (kill -9, a crash): {shown}{more}",
            "delete them, or write the same file again from Apsi (that removes its own leftovers)")


def _confinement(r):
    """The second wall (apsi_cli/sandbox/confine.py): is the kernel's confinement there, and is it on?"""
    from .sandbox.confine import SWITCH, describe

    state, detail = describe()
    if state == "on":
        r.check("confine", "Confinement", OK, detail)
    elif state == "off":
        r.check("confine", "Confinement", WARN, detail, f"unset {SWITCH} (it is for debugging)")
    else:
        r.check("confine", "Confinement", INFO, detail, "Linux ≥ 5.13 with Landlock enabled adds it")


def render(report, console=None):
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    table = Table(title="apsi doctor", show_lines=False, expand=False)
    table.add_column("", no_wrap=True)
    table.add_column("Check", no_wrap=True)
    table.add_column("Result")
    table.add_column("Fix")
    style = {OK: "green", WARN: "yellow", FAIL: "red", INFO: "dim"}
    for c in report.checks:
        table.add_row(f"[{style[c['status']]}]{SYMBOL[c['status']]}[/]", c["label"], _esc(c["detail"]),
                      _esc(c["fix"] or ""))
    console.print(table)
    if report.ok:
        console.print("[green]Nothing is broken.[/]")
    else:
        broken = sum(c["status"] == FAIL for c in report.checks)
        console.print(f"[red]{broken} problem{'s' if broken > 1 else ''} to fix (✗ above).[/]")


def _esc(text):
    from rich.markup import escape

    return escape(text)


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON, for scripts.")
@click.pass_context
def doctor(ctx, as_json):
    """Explain this machine's setup: Python, NumPy, PyTorch, GPUs, apsi.toml. Exit code 1 when broken."""
    perms = (ctx.obj or {}).get("perms", {}) if isinstance(ctx.obj, dict) else {}
    try:
        report = collect(perms)
    except KeyboardInterrupt as e:
        from apsi_lang import signals

        click.echo(f"apsi doctor: {signals.describe(e)} before the report was complete", err=True)
        ctx.exit(signals.exit_code(e))
    if as_json:
        import json

        click.echo(json.dumps(report.as_dict(), indent=2, ensure_ascii=False))
    else:
        render(report)
    ctx.exit(0 if report.ok else 1)
