"""`apsi doctor` and `apsi setup` through Click's runner; doctor's JSON checked field by field."""

import json
import platform
import sys

import pytest
from click.testing import CliRunner

from apsi_cli.main import cli
from tests.conftest import trust_toml

pytestmark = pytest.mark.slow


def doctor_json(*args):
    from apsi_cli.options import normalize_argv  # as `apsi` does: a bare --allow-env means all

    r = CliRunner().invoke(cli, normalize_argv([*args, "doctor", "--json"]))
    assert r.exception is None or isinstance(r.exception, SystemExit), r.output
    return r.exit_code, json.loads(r.stdout)


def checks(report, key):
    return [(c["status"], c["detail"], c["fix"]) for c in report["checks"] if c["key"] == key]


def test_doctor_json_gpu_machine_with_the_right_build(target, wheels, machine, monkeypatch):
    machine("rtx4090-driver560")
    target.pip_install(wheels["wheel"]["cu126"])
    monkeypatch.setenv("APSI_FAKE_TORCH_GPUS", "NVIDIA GeForce RTX 4090:8.9:23.99")
    code, rep = doctor_json()
    assert code == 0 and rep["ok"] is True
    assert set(rep) == {"ok", "apsi", "modules", "python", "platform", "numpy", "hardware", "torch",
                        "recommendation", "index", "config", "permissions", "checks"}
    assert rep["index"] == {"url": rep["index"]["url"], "source": "APSI_TORCH_INDEX"}
    assert rep["python"]["externally_managed"] is False
    assert checks(rep, "pep668") == [("ok", "pip may install into this Python (not externally managed)",
                                      None)]
    assert rep["torch"]["family"] == {"torchvision": None, "torchaudio": None}
    assert rep["apsi"]["version"]
    assert rep["modules"] == {"available": ["layers", "nn", "plot", "units", "web"], "broken": [],
                              "missing": []}
    assert rep["python"]["executable"] == str(target.python)
    assert rep["python"]["version"] == platform.python_version()
    assert rep["python"]["pip"]
    assert rep["platform"]["system"] == platform.system() and rep["platform"]["machine"] == platform.machine()
    import numpy

    assert rep["numpy"]["version"] == numpy.__version__ and rep["numpy"]["threads"] >= 1
    nv = rep["hardware"]["nvidia"]
    assert (nv["status"], nv["driver"], nv["cuda_driver_api"]) == ("ok", "560.35.03", "12.6")
    assert nv["gpus"] == [{"name": "NVIDIA GeForce RTX 4090", "vendor": "nvidia", "compute_cap": "8.9",
                           "compute_cap_source": "nvidia-smi", "arch": None, "memory_mib": 24564}]
    t = rep["torch"]
    assert (t["found"], t["imported"], t["version"], t["build"], t["cuda"], t["hip"], t["cudnn"]) == (
        True, True, "2.6.0+cu126", "cu126", "12.6", None, 90100)
    assert t["import_error"] is None
    assert t["devices"] == [{"name": "cuda:0", "kind": "cuda", "model": "NVIDIA GeForce RTX 4090",
                             "memory_gib": 24.0, "compute_cap": "8.9"}]
    rec = rep["recommendation"]
    assert rec["build"] == "torch-cuda" and rec["summary"] == "torch-cuda: PyTorch 2.6–2.14 + CUDA 12.6"
    assert rec["installed"] == "cu126" and rec["suits"] is True and rec["fix"] is None
    assert rec["reason"] == ("NVIDIA GeForce RTX 4090 (compute 8.9), driver 560.35.03 → "
                             "torch-cuda: PyTorch 2.6–2.14 + CUDA 12.6")
    assert rep["config"]["path"] is None and rep["config"]["allow"] == []
    from apsi_lang.permissions import PERMISSIONS

    assert rep["permissions"] == {"known": list(PERMISSIONS), "granted": [], "flags": []}
    assert checks(rep, "torch") == [("ok", "2.6.0+cu126, CUDA 12.6, cuDNN 90100", None)]
    assert checks(rep, "devices") == [("ok", "cpu; cuda:0 NVIDIA GeForce RTX 4090, 24.0 GiB", None)]
    assert checks(rep, "gpu") == [("ok", "driver 560.35.03 (runs CUDA ≤ 12.6): NVIDIA GeForce RTX 4090 "
                                         "(compute 8.9), 24 GiB", None)]
    assert all(c["status"] in ("ok", "warn", "fail", "info") for c in rep["checks"])


def test_doctor_cpu_build_on_a_gpu_machine_gives_the_fix(target, wheels, machine):
    machine("rtx4090-driver560")
    target.pip_install(wheels["wheel"]["cpu"])
    code, rep = doctor_json()
    assert code == 0                          # works, but not what the machine deserves: a warning
    rec = rep["recommendation"]
    assert rec["suits"] is False and rec["fix"] == "apsi pkg install torch-cuda"
    assert checks(rep, "choice") == [(
        "warn", "PyTorch 2.13.0+cpu is the CPU build, but this machine has a GPU that torch-cuda would use; "
                "torch-auto would choose torch-cuda: PyTorch 2.6–2.14 + CUDA 12.6",
        "apsi pkg install torch-cuda")]


def test_doctor_gpu_build_that_sees_no_gpu_is_broken(target, wheels, machine):
    machine("rtx4090-driver560")
    target.pip_install(wheels["wheel"]["cu126"])
    code, rep = doctor_json()
    assert code == 1 and rep["ok"] is False
    assert checks(rep, "devices")[0][:2] == ("fail", "PyTorch is a GPU build but sees no GPU")


def test_doctor_broken_torch(target, wheels, machine):
    machine(None)
    target.pip_install(wheels["wheel"]["broken"])
    code, rep = doctor_json()
    assert code == 1
    assert rep["torch"]["imported"] is False
    assert rep["torch"]["import_error"].startswith("ImportError: libcudart.so.12")
    status, detail, fix = checks(rep, "torch")[0]
    assert status == "fail" and "is installed but does not import" in detail
    assert fix == "apsi pkg install torch"


def test_doctor_without_torch_and_with_driver_not_loaded(target, machine):
    machine("driver-not-loaded")
    code, rep = doctor_json()
    assert code == 1
    assert rep["torch"]["found"] is False
    assert checks(rep, "torch") == [("warn", "not installed (optional: the torch backend needs it)",
                                     "apsi pkg install torch-auto")]
    status, detail, fix = checks(rep, "gpu")[0]
    assert status == "fail" and "installed but not loaded" in detail and "modprobe" in fix
    assert rep["recommendation"]["build"] is None and "modprobe" in rep["recommendation"]["stop"]


def test_doctor_reports_apsi_toml_and_its_permissions(target, machine, tmp_path):
    machine(None)
    (tmp_path / "apsi.toml").write_text('[run]\nallow = ["python", "net"]\n[extra]\n')
    trust_toml(tmp_path / "apsi.toml")
    code, rep = doctor_json("--allow-env")
    assert code == 0
    assert rep["config"]["path"] == str(tmp_path / "apsi.toml")
    assert rep["permissions"]["granted"] == ["python", "net"] and rep["permissions"]["flags"] == ["env"]
    assert ("warn", f"{tmp_path / 'apsi.toml'}: unknown section [extra] ignored (known: run, pkg)",
            "remove or correct the key") in checks(rep, "config")


def test_doctor_never_lists_a_flag_grant_as_not_granted(target, machine, tmp_path):
    """issue 28: `apsi --allow-python doctor` said "by flags: python; not granted: python, …"."""
    machine(None)
    code, rep = doctor_json("--allow-python", "--allow-read=/data", "--deny-net")
    (status, detail, _), = checks(rep, "permissions")
    assert detail == ("granted by apsi.toml: none; by flags: python, read (for /data), deny-net; "
                      "not granted: write, net, env, run"), detail
    code, rep = doctor_json("-A")
    assert checks(rep, "permissions")[0][1].endswith("by flags: all; not granted: none")


def test_doctor_bad_apsi_toml_is_broken(target, machine, tmp_path):
    machine(None)
    (tmp_path / "apsi.toml").write_text('[run]\nallow = ["root"]\n')
    trust_toml(tmp_path / "apsi.toml")
    code, rep = doctor_json()
    assert code == 1
    status, detail, _ = checks(rep, "config")[0]
    assert status == "fail" and "run.allow has unknown permission 'root'" in detail


def test_doctor_table(target, machine, monkeypatch):
    machine("rtx4090-driver560")
    monkeypatch.setenv("COLUMNS", "250")
    r = CliRunner().invoke(cli, ["doctor"], terminal_width=200)
    assert r.exit_code == 0, r.output
    assert "apsi doctor" in r.output and "✓" in r.output and "!" in r.output
    assert "torch-auto would choose torch-cuda: PyTorch 2.6–2.14 + CUDA 12.6" in r.output
    assert "apsi pkg install torch-auto" in r.output


def test_setup_with_scripted_answers(target, machine, tmp_path):
    machine("t4-driver550")
    r = CliRunner().invoke(cli, ["setup"], input="n\ny\npython, bogus\npython,net\n", terminal_width=200)
    assert r.exit_code == 0, r.output
    out = r.output
    assert "NVIDIA: Tesla T4 (compute 7.5), 15 GiB, driver 550.90.07" in out
    assert ("Recommended PyTorch: Tesla T4 (compute 7.5), driver 550.90.07 → torch-cuda: "
            "PyTorch 2.6–2.14 + CUDA 12.6") in out
    assert "unknown: bogus" in out
    assert (tmp_path / "apsi.toml").read_text().endswith('[run]\nallow = ["python", "net"]\n')
    assert "apsi doctor" in out and "Nothing is broken." in out


def test_setup_yes_installs_and_writes_defaults(target, wheels, machine, tmp_path):
    machine(None)
    r = CliRunner().invoke(cli, ["setup", "--yes"], terminal_width=200)
    assert r.exit_code == 0, r.output
    assert "Install it now (apsi pkg install torch-auto)? yes (--yes)" in r.output
    assert target.torch() == "2.13.0+cpu"
    assert (tmp_path / "apsi.toml").read_text().endswith('allow = ["python"]\n')
    r = CliRunner().invoke(cli, ["setup", "--yes"], terminal_width=200)
    assert "exists already; it is left as it is" in r.output
    # the build it installed suits the machine: no question whose answer changes nothing
    assert "PyTorch 2.13.0+cpu suits this machine: it is kept, and nothing is installed." in r.output
    assert "Install it now" not in r.output


def test_setup_with_input_that_ends_says_so_and_installs_nothing(target, machine, tmp_path):
    # piped input that ends was 'Setup interrupted', as if Ctrl-C had been pressed
    machine(None)
    r = CliRunner().invoke(cli, ["setup"], input="", terminal_width=200)
    assert r.exit_code == 1
    assert ("The setup asks questions, and its input ended before an answer (it is not a terminal); "
            "nothing more was changed. Run `apsi setup` in a terminal, or `apsi setup --yes` to take "
            "every default.") in r.output
    assert "interrupted" not in r.output and "No module named 'torch'" in target.torch()


def test_setup_when_the_driver_is_not_loaded_installs_nothing(target, machine, tmp_path):
    machine("driver-not-loaded")
    r = CliRunner().invoke(cli, ["setup"], input="n\n", terminal_width=200)
    assert r.exit_code == 1                                   # the doctor reports the driver
    assert "Install it now" not in r.output and "sudo modprobe nvidia" in r.output
    assert not (tmp_path / "apsi.toml").exists()


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX start-up check")
def test_commands_do_not_load_heavy_modules_at_start():
    import subprocess

    code = ("import sys; import apsi_cli.main; "
            "print(sorted(m for m in ('rich', 'numpy', 'torch', 'apsi_cli.pkg_cmd', 'apsi_cli.doctor') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_doctor_python_without_pip(target, machine, tmp_path, monkeypatch):
    from . import helpers

    machine(None)
    bare = helpers.make_venv(tmp_path / "bare", with_pip=False)
    monkeypatch.setenv("APSI_PYTHON", str(bare))
    code, rep = doctor_json()
    assert code == 1 and rep["python"]["pip"] is None
    assert checks(rep, "pip") == [("fail", f"pip is missing in {bare}; `apsi pkg` needs it",
                                   f"{bare} -m ensurepip --upgrade")]


def test_doctor_reports_a_module_that_cannot_load(monkeypatch):
    from importlib.metadata import EntryPoint

    from apsi_cli import doctor

    broken = EntryPoint(name="ghost", value="no_such_package_xyz:factory", group="apsi.modules")
    from apsi_lang.installed import entry_points

    shipped = dict(entry_points("apsi.modules"))
    monkeypatch.setattr("apsi_lang.installed.entry_points", lambda group: {"ghost": broken, **shipped})
    r = doctor.Report()
    doctor._modules(r)
    assert r.sections["modules"]["available"] == ["layers", "nn", "plot", "units", "web"]
    (check,) = r.checks
    assert check["status"] == doctor.FAIL and "ghost (no_such_package_xyz:factory" in check["detail"]
    assert not r.ok


@pytest.mark.parametrize("fixture, says, fix", [
    ("nvml-mismatch", "the NVIDIA driver was updated but the old one still runs", "reboot"),
    ("hang-after-field", "nvidia-smi did not answer within 1 s after rejecting the compute_cap field",
     "reboot"),
])
def test_doctor_nvml_mismatch_and_hang_are_broken(target, machine, monkeypatch, fixture, says, fix):
    machine(fixture)
    monkeypatch.setenv("APSI_DETECT_TIMEOUT", "1")
    code, rep = doctor_json()
    assert code == 1 and rep["ok"] is False
    status, detail, how = checks(rep, "gpu")[0]
    assert status == "fail" and detail.startswith(says) and fix in how
    nv = rep["hardware"]["nvidia"]
    assert nv["note"] == detail and nv["fix"] == how and nv["lost"] == []


def test_doctor_a_lost_gpu_is_broken_and_named(target, machine):
    machine("one-gpu-lost")
    code, rep = doctor_json()
    assert code == 1
    assert rep["hardware"]["nvidia"]["lost"] == ["GPU 0000:41:00.0"]
    assert ("fail", "nvidia-smi cannot reach GPU 0000:41:00.0 (lost: it fell off the bus or hung)",
            "reboot to recover it") in checks(rep, "gpu")


def test_doctor_family_pep668_index_and_overrides(target, wheels, machine, monkeypatch, tmp_path):
    machine(None)
    target.pip_install(wheels["wheel"]["cu128"])
    target.pip_install(wheels["wheel"]["tv-cu126"])       # belongs to 2.6, not 2.7
    monkeypatch.delenv("APSI_TORCH_INDEX")
    (tmp_path / "apsi.toml").write_text('[pkg]\ntorch_index = "https://mirror.example/whl"\n')
    trust_toml(tmp_path / "apsi.toml")
    monkeypatch.setenv("APSI_CUDA_DRIVER_VERSION", "550.54.15")
    monkeypatch.setenv("APSI_GPU_COMPUTE_CAPABILITY", "8.9")
    code, rep = doctor_json()
    assert code == 1
    assert rep["torch"]["family"] == {"torchvision": "0.21.0+cu126", "torchaudio": None}
    assert checks(rep, "family") == [("fail", "torchvision 0.21.0+cu126 belongs to another PyTorch (this one "
                                              "pairs with torchvision 0.22) (PyTorch 2.7.0+cu128)",
                                      "apsi pkg install torch-cuda torchvision")]
    assert rep["index"] == {"url": "https://mirror.example/whl",
                            "source": f"[pkg] torch_index in {tmp_path / 'apsi.toml'}"}
    assert checks(rep, "index")[0][0] == "warn"
    assert checks(rep, "overrides") == [("info", "APSI_CUDA_DRIVER_VERSION=550.54.15; "
                                                 "APSI_GPU_COMPUTE_CAPABILITY=8.9: torch-auto assumes these "
                                                 "instead of what it detects", None)]


def test_setup_in_a_subfolder_edits_the_projects_apsi_toml(target, machine, tmp_path, monkeypatch):
    import os
    import stat

    machine(None)
    project = tmp_path / "proj"
    (project / "src").mkdir(parents=True)
    toml = project / "apsi.toml"
    toml.write_text('# my project\n[run]\nread = ["../data"]\nallow = ["net"]\n\n[pkg]\n')
    toml.chmod(0o640)                                  # not the default: it must be kept
    monkeypatch.chdir(project / "src")
    # issue 29: the file was never trusted, so the wizard shows all it grants and asks (y) before trusting
    r = CliRunner().invoke(cli, ["setup"], input="n\ny\npython\ny\n", terminal_width=200)
    assert r.exit_code == 0, r.output
    assert f"This folder is inside the project at {project}" in r.output
    assert f'Added python to [run] allow in {toml}.' in r.output
    assert "allow = ['net', 'python']" in r.output and "read = [" in r.output
    from apsi_lang import trust

    assert trust.state(toml) == trust.TRUSTED
    assert toml.read_text() == '# my project\n[run]\nread = ["../data"]\nallow = ["net", "python"]\n\n[pkg]\n'
    assert stat.S_IMODE(os.stat(toml).st_mode) == 0o640
    assert not (project / "src" / "apsi.toml").exists()


def test_files_setup_writes_keep_normal_modes(target, machine, tmp_path):
    import os
    import stat

    machine(None)
    umask = os.umask(0o022)
    try:
        r = CliRunner().invoke(cli, ["setup"], input="n\ny\npython\n", terminal_width=200)
    finally:
        os.umask(umask)
    assert r.exit_code == 0, r.output
    assert stat.S_IMODE(os.stat(tmp_path / "apsi.toml").st_mode) == 0o644
