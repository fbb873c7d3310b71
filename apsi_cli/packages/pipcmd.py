"""The Python Apsi installs into, what it holds, and running pip there.

The target is the Python that runs Apsi (`sys.executable`); APSI_PYTHON names another one (tests use a
throwaway virtual environment). Everything about the target is asked in a subprocess of it, so a broken
PyTorch there cannot crash Apsi. pip runs with the user's own configuration and PIP_* variables.
"""

import json
import os
import re
import shlex
import subprocess
import sys
import threading

PROBE_TIMEOUT = float(os.environ.get("APSI_PROBE_TIMEOUT", "120"))


class PipError(Exception):
    """pip could not do what was asked. `message` says what happened and what to do."""

    def __init__(self, message):
        super().__init__(message)
        self.message = message


def target_python():
    return os.environ.get("APSI_PYTHON") or sys.executable


def quote(cmd):
    return " ".join(shlex.quote(str(c)) for c in cmd)


# Runs inside the target Python. Reads torch/version.py without importing torch (fast, and works when
# torch is broken); imports torch only when asked (doctor).
_PROBE = r"""
import json, os, sys, sysconfig
sys.path[:] = [p for p in sys.path if p not in ("", os.getcwd())]
import importlib.util, importlib.metadata as md
out = {"python": {"executable": sys.executable, "version": sys.version.split()[0],
                  "platform": sysconfig.get_platform(), "implementation": sys.implementation.name}}
try:
    import pip
    out["pip"] = pip.__version__
except Exception as e:
    out["pip"] = None
    if not isinstance(e, ModuleNotFoundError):
        out["pip_error"] = f"{type(e).__name__}: {e}"[:300]
marker = os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")
out["externally_managed"] = os.path.isfile(marker) and sys.prefix == getattr(sys, "base_prefix", sys.prefix)
out["marker"] = marker
fam = {}
for name in ("torchvision", "torchaudio"):
    try:
        fam[name] = md.version(name)
    except md.PackageNotFoundError:
        fam[name] = None
out["family"] = fam
t = {"found": False}
spec = importlib.util.find_spec("torch")
if spec is not None and spec.submodule_search_locations:
    t["found"] = True
    t["location"] = list(spec.submodule_search_locations)[0]
    vfile = os.path.join(t["location"], "version.py")
    ns = {}
    try:
        exec(compile(open(vfile, encoding="utf-8").read(), vfile, "exec"), ns)
    except Exception as e:
        t["version_error"] = f"{type(e).__name__}: {e}"
    t["version"] = ns.get("__version__")
    for k in ("cuda", "hip", "xpu"):
        t[k] = ns.get(k) if isinstance(ns.get(k), str) else None
    try:
        t["metadata_version"] = md.version("torch")
    except md.PackageNotFoundError:
        t["metadata_version"] = None
    if not t["version"]:
        t["version"] = t["metadata_version"]
if t["found"] and "--import" in sys.argv:
    try:
        import torch
        t["imported"] = True
        t["version"] = str(torch.__version__)
        try:
            t["cudnn"] = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
        except Exception:
            t["cudnn"] = None
        devs = []
        if torch.cuda.is_available():
            kind = "rocm" if getattr(torch.version, "hip", None) else "cuda"
            for i in range(torch.cuda.device_count()):
                p = torch.cuda.get_device_properties(i)
                devs.append({"name": f"cuda:{i}", "kind": kind, "model": p.name,
                             "memory_gib": round(p.total_memory / 2**30, 1),
                             "compute_cap": f"{p.major}.{p.minor}"})
        mps = getattr(torch.backends, "mps", None)
        if mps is not None and mps.is_available():
            devs.append({"name": "mps", "kind": "mps", "model": "Apple GPU"})
        xpu = getattr(torch, "xpu", None)
        if xpu is not None and xpu.is_available():
            for i in range(xpu.device_count()):
                devs.append({"name": f"xpu:{i}", "kind": "xpu", "model": str(xpu.get_device_name(i))})
        t["devices"] = devs
    except BaseException as e:
        t["imported"] = False
        lines = [l for l in str(e).strip().splitlines() if l.strip()] or [""]
        t["import_error"] = f"{type(e).__name__}: {lines[-1]}"[:500]
out["torch"] = t
print("APSI-PROBE " + json.dumps(out))
"""


def probe(python=None, import_torch=False, timeout=None):
    """What the target Python is and holds: {"python": {...}, "pip": version|None, "torch": {...}}.

    Raises PipError when the Python cannot be run at all."""
    python = python or target_python()
    cmd = [python, "-c", _PROBE] + (["--import"] if import_torch else [])
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout or PROBE_TIMEOUT,
                           stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise PipError(f"the Python that runs Apsi ({python}) is not there; reinstall Apsi "
                       f"(or unset APSI_PYTHON)") from None
    except subprocess.TimeoutExpired:
        if import_torch:
            # PyTorch hangs on import (a stuck GPU?): answer without it.
            result = probe(python, import_torch=False, timeout=timeout)
            result["torch"]["imported"] = False
            result["torch"]["import_error"] = (f"importing torch took longer than "
                                               f"{timeout or PROBE_TIMEOUT:g} s")
            return result
        raise PipError(f"{python} did not answer within {timeout or PROBE_TIMEOUT:g} s") from None
    except OSError as e:
        raise PipError(f"cannot run {python}: {e.strerror}") from None
    for line in r.stdout.splitlines():
        if line.startswith("APSI-PROBE "):
            return json.loads(line[len("APSI-PROBE "):])
    last = (r.stderr.strip().splitlines() or ["no output"])[-1]
    raise PipError(f"cannot ask {python} what it holds: {last}")


def pip_cmd(python, *args):
    return [python, "-m", "pip", *args]


def run_pip(cmd, echo=True, env=None):
    """Run a pip command, showing its output as it goes. Returns (exit code, stderr text).

    stdout passes straight through (pip's progress); stderr is shown and also kept for diagnosis.
    Ctrl-C stops pip and raises KeyboardInterrupt here once pip has ended."""
    try:
        proc = subprocess.Popen(cmd, stdout=None, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env)
    except OSError as e:
        raise PipError(f"cannot run {cmd[0]}: {e.strerror}") from None
    lines = []

    def pump():
        for raw in proc.stderr:
            text = raw.decode("utf-8", "replace")
            lines.append(text)
            if echo:
                sys.stderr.write(text)
                sys.stderr.flush()

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        rc = proc.wait()
    except KeyboardInterrupt:
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        reader.join(timeout=5)
        raise
    reader.join(timeout=5)
    return rc, "".join(lines)


# pip settings that choose where packages come from. A PyTorch build is installed without them, so the
# wheel that lands is the one from the PyTorch index announced, never a look-alike from an extra index.
SOURCE_SETTINGS = ("index-url", "extra-index-url", "find-links", "no-index", "constraint", "requirement",
                   "pre", "only-binary", "no-binary", "prefer-binary", "upgrade", "upgrade-strategy")
# Settings that only say how to reach an index; they are kept.
KEPT_SETTINGS = ("proxy", "default-timeout", "cert", "client-cert", "trusted-host", "timeout", "retries",
                 "cache-dir", "no-cache-dir", "break-system-packages", "disable-pip-version-check",
                 "no-input", "progress-bar", "quiet", "verbose")


def isolated_env(python):
    """os.environ for a PyTorch install: pip's configuration files are not read (PIP_CONFIG_FILE is
    os.devnull), PIP_* variables that choose packages are dropped, and the connection settings of the
    user's pip configuration (proxy, certificates, trusted hosts, timeouts, cache) are passed on as
    PIP_* variables. Returns (env, dropped): `dropped` names what was left out, to tell the user."""
    env, dropped = {}, []
    for k, v in os.environ.items():
        name = k[4:].lower().replace("_", "-") if k.startswith("PIP_") else None
        if name is None or name in KEPT_SETTINGS:
            env[k] = v
        elif name != "config-file":
            dropped.append(k)
    configured = os.environ.get("PIP_CONFIG_FILE")
    read_config = configured != os.devnull               # os.devnull: pip reads no configuration file
    for key, value in (_pip_config(python, env) if read_config else []):
        name = key.split(".", 1)[-1]
        var = "PIP_" + name.upper().replace("-", "_")
        if name in KEPT_SETTINGS:
            env.setdefault(var, " ".join(value.split()))
        elif name in SOURCE_SETTINGS and key not in dropped:
            dropped.append(key)
    env["PIP_CONFIG_FILE"] = os.devnull
    return env, dropped


def _pip_config(python, env):
    """[(section.key, value)] from `pip config list` in the target Python (empty when it fails)."""
    try:
        r = subprocess.run([str(python), "-m", "pip", "config", "list"], capture_output=True, text=True,
                           stdin=subprocess.DEVNULL, timeout=60, env={**env, **(
                               {"PIP_CONFIG_FILE": os.environ["PIP_CONFIG_FILE"]}
                               if "PIP_CONFIG_FILE" in os.environ else {})})
    except (OSError, subprocess.TimeoutExpired):
        return []
    items = []
    for line in r.stdout.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            items.append((key.strip(), value.strip().strip("'\"")))
    return items


def constraint_file(folder, torch_version):
    """A pip constraints file that keeps the installed PyTorch build exactly as it is."""
    path = os.path.join(folder, "keep-torch.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"torch=={torch_version}\n")
    return path


_CONFLICT = re.compile(r"^(\S+ \S+) requires (torch\b[^,]*), but you have torch ", re.M)


def torch_conflicts(stderr):
    """[('name version', 'torch==2.6.0')] for the packages pip says need another PyTorch. pip prints these
    after "ERROR: pip's dependency resolver does not currently take into account …" and still exits 0."""
    return [(m.group(1), m.group(2).strip()) for m in _CONFLICT.finditer(stderr or "")]


NETWORK_SIGNS = ("Failed to establish a new connection", "Max retries exceeded", "NewConnectionError",
                 "Temporary failure in name resolution", "Name or service not known", "Connection refused",
                 "Read timed out", "ProxyError", "SSLError", "Network is unreachable", "HTTP error 5",
                 "ConnectTimeoutError")
NO_MATCH_SIGNS = ("No matching distribution found", "Could not find a version that satisfies")


def explain_failure(stderr, what, index_url, pyinfo, torch=True, torch_index=None):
    """A one-paragraph message for a failed pip run: what happened, and what to do.
    `torch` says whether a PyTorch build was asked for (its advice differs from a plain package's);
    `torch_index`, whether index_url is one of the PyTorch indexes Apsi chose (torchvision for the
    installed build comes from there): a network failure's advice then names Apsi's settings of it
    rather than pip's. By default, as `torch`.
    "No matching distribution" is told apart from a network failure: pip prints it after a failed
    connection too, so it means "no such package" only when no connection error came before it."""
    import re

    py = pyinfo.get("python", {})
    where = f"Python {py.get('version', '?')} on {py.get('platform', '?')}"
    source = f" from {index_url}" if index_url else ""
    network = any(sign in stderr for sign in NETWORK_SIGNS)
    no_match = any(sign in stderr for sign in NO_MATCH_SIGNS)
    missing = re.search(r"No matching distribution found for (\S+)", stderr)
    if no_match and not network:
        name = missing.group(1) if missing else what
        project = re.split(r"[<>=!~\[; ]", name, maxsplit=1)[0].lower()
        if torch and project == "torch":
            name = what
        elif torch and project == "torchaudio" and "==2.11" in name:
            return (f"the index{source} has no {name} for {where}. torchaudio 2.11 is torchaudio's last "
                    f"release (it runs with every later PyTorch), and this index does not carry it: "
                    f"remove it (`apsi pkg uninstall torchaudio`) to install {what}, or choose a build "
                    f"whose index has it.")
        elif torch and project in ("torchvision", "torchaudio"):
            return (f"the index{source} has no {name} for {where}, the {project} release paired with "
                    f"{what}: install {project} later, when the index has it, or choose another build.")
        elif torch and missing:
            return (f"{what} needs {name}, and the index{source} has no {name} for {where}: a mirror must "
                    f"carry PyTorch's dependencies too (or use PyTorch's own index).")
        if not torch:
            return (f"no package matches {name}{source} for {where}: check the name and version "
                    f"(pip's index has no release of it for this Python and platform).")
        return (f"no {name} wheel{source} matches {where}. That index may not carry this Python version "
                f"or platform: try another build (`apsi pkg list` shows what is installed, "
                f"`apsi pkg install torch-auto --dry-run` what fits), or a Python version PyTorch supports.")
    if "ResolutionImpossible" in stderr and "torch==" in stderr and not torch:
        return (f"{what} needs a different PyTorch than the one installed, and Apsi keeps the installed "
                f"build (pip was told so with a constraint). Name a PyTorch build together with it "
                f"(`apsi pkg install torch-auto {what}`), or ask for a release of {what} that accepts "
                f"the installed PyTorch.")
    if network and not (torch if torch_index is None else torch_index):
        return (f"pip could not reach the package index{source} (network, proxy or mirror problem). "
                f"Check the connection; pip's own settings (pip.conf, PIP_INDEX_URL) choose the index.")
    if network:
        return (f"pip could not reach the package index{source} (network, proxy or mirror problem). "
                f"Check the connection, or point Apsi at a mirror: --torch-index URL, APSI_TORCH_INDEX, "
                f"or [pkg] torch_index in apsi.toml; pip's proxy and certificate settings apply.")
    if "No module named pip" in stderr:
        return (f"pip is not installed in {py.get('executable', 'the Python that runs Apsi')}: "
                f"run `{py.get('executable', 'python')} -m ensurepip --upgrade`, then try again.")
    if "Permission denied" in stderr or "EnvironmentError: [Errno 13]" in stderr:
        return (f"pip has no permission to write into {py.get('executable', 'this Python')}'s packages; "
                f"run Apsi from a Python you own (a virtual environment), or as the owner of that Python.")
    if "No space left on device" in stderr:
        return "the disk is full: free some space (PyTorch needs several GB), then try again."
    last = [ln for ln in stderr.strip().splitlines() if ln.strip()]
    tail = last[-1].strip() if last else "no message"
    return f"pip failed installing {what}{source} ({where}): {tail}"
