"""Stand-ins for tests: fake nvidia-smi programs, tiny torch wheels, PEP 503 indexes, a throwaway venv."""

import base64
import hashlib
import os
import shutil
import stat
import subprocess
import sys
import zipfile
from pathlib import Path
from urllib.parse import quote

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "nvidia-smi"
HUNG = 60           # seconds a hanging stand-in sleeps: a test that waited for it took at least this


# ---- fake nvidia-smi -------------------------------------------------------------------------------

def fake_nvidia_smi(path, fixture):
    """Write an executable at `path` that answers like nvidia-smi on the machine `fixture`.

    Exit codes follow what nvidia-smi does: 9 when the driver is not loaded, 2 when the driver does not
    know the compute_cap field, 18 on a driver/library version mismatch, 6 when no GPU is found, 15 when
    a GPU is lost, 0 otherwise. A `hangs` file names the answers after which it hangs (query, banner)."""
    d = FIXTURES / fixture
    hangs = (d / "hangs").read_text().split() if (d / "hangs").exists() else []

    def rc_for(name):
        text = (d / name).read_bytes().decode("utf-8", "replace") if (d / name).exists() else ""
        for sign, rc in (("couldn't communicate", 9), ("is not a valid field", 2), ("version mismatch", 18),
                         ("No devices were found", 6), ("Unable to determine the device handle", 15)):
            if sign in text:
                return rc
        return 0

    def answer(name, mode):
        tail = f"exec /bin/sleep {HUNG}" if mode in hangs else f"exit {rc_for(name)}"
        return f"/bin/cat '{d}/{name}'; {tail}"

    script = f"""#!/bin/sh
case "$*" in
  *compute_cap*) {answer('query.csv', 'query')} ;;
  *--query-gpu*) {answer('query-without-compute_cap.csv', 'query-old')} ;;
  *) {answer('banner.txt', 'banner')} ;;
esac
"""
    _write_exe(path, script)
    return path


ROCMINFO = FIXTURES.parent / "rocminfo"


def fake_rocminfo(path, fixture):
    """An executable at `path` that prints what rocminfo prints on the machine `fixture`."""
    _write_exe(path, f"#!/bin/sh\n/bin/cat '{ROCMINFO / fixture / 'rocminfo.txt'}'\n")
    return path


def hanging_nvidia_smi(path):
    _write_exe(path, f"#!/bin/sh\nexec /bin/sleep {HUNG}\n")
    return path


def failing_query_nvidia_smi(path, fixture):
    """nvidia-smi whose --query-gpu fails (exit 6) but whose banner works."""
    d = FIXTURES / fixture
    _write_exe(path, f"""#!/bin/sh
case "$*" in
  *--query-gpu*) echo "Unknown Error"; exit 6 ;;
esac
/bin/cat '{d}/banner.txt'
""")
    return path


def _write_exe(path, text):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


# ---- stand-in torch wheels -------------------------------------------------------------------------

_INIT = '''"""A stand-in for PyTorch, for Apsi's tests."""
from . import version, cuda, backends
__version__ = version.__version__
'''

_INIT_BROKEN = ('raise ImportError("libcudart.so.12: cannot open shared object file: '
                'No such file or directory")\n')

# Devices come from APSI_FAKE_TORCH_GPUS: "name:major.minor:GiB;..." (only when the build is a GPU one).
_CUDA = '''import os
from . import version

def _gpus():
    if not (version.cuda or version.hip):
        return []
    spec = os.environ.get("APSI_FAKE_TORCH_GPUS", "")
    return [g.split(":") for g in spec.split(";") if g]

class _Props:
    def __init__(self, name, cc, gib):
        self.name = name
        self.major, self.minor = (int(p) for p in cc.split("."))
        self.total_memory = int(float(gib) * 2**30)

def is_available():
    return bool(_gpus())

def device_count():
    return len(_gpus())

def get_device_properties(i):
    return _Props(*_gpus()[i])
'''

_BACKENDS = '''class cudnn:
    @staticmethod
    def is_available():
        from .. import version
        return bool(version.cuda)
    @staticmethod
    def version():
        return 90100

class mps:
    @staticmethod
    def is_available():
        return False
'''


def make_torch_wheel(folder, version, cuda=None, hip=None, broken=False, requires=(), reports=None):
    """Write torch-VERSION-py3-none-any.whl into `folder`; returns its path. `reports`: the version its
    torch/version.py gives, when that differs from the wheel's (a mislabelled wheel)."""
    files = {
        "torch/__init__.py": _INIT_BROKEN if broken else _INIT,
        "torch/version.py": (f"__version__ = {reports or version!r}\ncuda = {cuda!r}\nhip = {hip!r}\n"
                             "xpu = None\n"
                             f"git_version = 'stand-in'\n"),
        "torch/cuda.py": _CUDA,
        "torch/backends/__init__.py": _BACKENDS,
    }
    return _wheel(folder, "torch", version, files, requires)


def make_wheel(folder, name, version, requires=()):
    """A stand-in wheel for any project (torchvision, a package that depends on torch, …)."""
    module = name.replace("-", "_")
    return _wheel(folder, name, version, {f"{module}/__init__.py": f"__version__ = {version!r}\n"}, requires)


def _wheel(folder, name, version, files, requires):
    module = name.replace("-", "_")
    dist = f"{module}-{version}.dist-info"
    deps = "".join(f"Requires-Dist: {r}\n" for r in requires)
    files[f"{dist}/METADATA"] = (f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
                                 f"Summary: stand-in\n{deps}")
    files[f"{dist}/WHEEL"] = ("Wheel-Version: 1.0\nGenerator: apsi-tests\nRoot-Is-Purelib: true\n"
                              "Tag: py3-none-any\n")
    files[f"{dist}/top_level.txt"] = f"{module}\n"
    record = []
    for name, text in files.items():
        data = text.encode()
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}")
    record.append(f"{dist}/RECORD,,")
    files[f"{dist}/RECORD"] = "\n".join(record) + "\n"
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{module}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, text in files.items():
            z.writestr(name, text)
    return path


def install_wheel(site, wheel):
    """Leave in `site` what `pip install --no-deps --force-reinstall WHEEL` leaves for these stand-in
    wheels: an older copy of the project removed, the wheel's files, and its dist-info with pip's
    INSTALLER (in RECORD too, so pip uninstalls it whole). A test's starting state, not what it tests;
    written here because a pip run costs half a second (suite time)."""
    site = Path(site)
    module = Path(wheel).name.split("-")[0]
    remove_dists(site, (module,))
    with zipfile.ZipFile(wheel) as z:
        z.extractall(site)
        dist = next(n.split("/")[0] for n in z.namelist() if n.endswith(".dist-info/RECORD"))
    (site / dist / "INSTALLER").write_text("pip\n")
    with open(site / dist / "RECORD", "a") as f:
        f.write(f"{dist}/INSTALLER,,\n")


def make_index(base, key, wheels):
    """A PEP 503 simple index at base/key holding `wheels` (paths), one project page per project."""
    projects = {}
    for w in wheels:
        projects.setdefault(Path(w).name.split("-")[0].replace("_", "-").lower(), []).append(Path(w))
    root = Path(base) / key
    for project, files in projects.items():
        folder = root / project
        folder.mkdir(parents=True, exist_ok=True)
        links = []
        for w in files:
            shutil.copy(w, folder / w.name)
            links.append(f'<a href="{quote(w.name)}">{w.name}</a><br>')
        page = "<!DOCTYPE html><html><body>\n" + "\n".join(links) + "\n</body></html>\n"
        (folder / "index.html").write_text(page)
    names = sorted(p.name for p in root.iterdir() if p.is_dir())
    (root / "index.html").write_text("<html><body>" + "".join(f'<a href="{n}/">{n}</a>' for n in names)
                                     + "</body></html>\n")
    return root


# ---- the throwaway Python ---------------------------------------------------------------------------

def isolated_pip_env(cache):
    """os.environ without this machine's pip settings: no config file, no PIP_* variables."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1",
               PIP_CACHE_DIR=str(cache), PIP_RETRIES="0", PIP_TIMEOUT="3", PYTHONDONTWRITEBYTECODE="1")
    return env


def make_venv(path, with_pip=True):
    cmd = [sys.executable, "-m", "venv", str(path)] + ([] if with_pip else ["--without-pip"])
    subprocess.run(cmd, check=True, capture_output=True)
    return venv_python(path)


def venv_python(path):
    bindir = "Scripts" if os.name == "nt" else "bin"
    return Path(path) / bindir / ("python.exe" if os.name == "nt" else "python")


def site_packages(python):
    out = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                         capture_output=True, text=True, check=True)
    return Path(out.stdout.strip())


def remove_torch(site):
    for p in list(site.glob("torch")) + list(site.glob("torch-*.dist-info")):
        shutil.rmtree(p, ignore_errors=True)


def remove_dists(site, names):
    for name in names:
        for p in list(site.glob(name)) + list(site.glob(f"{name}-*.dist-info")):
            shutil.rmtree(p, ignore_errors=True)


def installed(python, name):
    """The version of `name` installed in the venv, or None."""
    r = subprocess.run([str(python), "-c", f"import importlib.metadata as m; print(m.version({name!r}))"],
                       capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else None


def torch_in(python, env=None):
    """The torch version the venv imports, or the import error's last line."""
    r = subprocess.run([str(python), "-c", "import torch; print(torch.__version__)"], capture_output=True,
                       text=True, env=env, cwd=os.path.dirname(str(python)))
    return r.stdout.strip() if r.returncode == 0 else "ERROR: " + (r.stderr.strip().splitlines() or [""])[-1]
