"""`apsi pkg install/list/uninstall` with real pip into a throwaway venv, from local file:// indexes."""

import pytest

pytestmark = pytest.mark.slow


def dist_infos(target):
    return sorted(p.name for p in target.site.glob("torch-*.dist-info"))


def test_explicit_build_uses_its_index(target, wheels, machine):
    machine(None)
    r = target.apsi("pkg", "install", "torch-cuda")
    assert r.returncode == 0, r.all
    assert "torch-cuda: PyTorch ≥ 2.6 + CUDA 12.6" in r.stdout
    assert f"Downloading torch>=2.6 from {wheels['base']}/cu126" in r.stdout
    assert "Installed PyTorch 2.6.0+cu126 (CUDA 12.6)" in r.stdout
    assert target.torch() == "2.6.0+cu126"


def test_explicit_build_replaces_the_old_one(target, wheels, machine):
    machine(None)
    target.pip_install(wheels["wheel"]["cu126"])
    r = target.apsi("pkg", "install", "torch-cu128")
    assert r.returncode == 0, r.all
    assert target.torch() == "2.7.0+cu128"
    assert dist_infos(target) == ["torch-2.7.0+cu128.dist-info"]


def test_same_build_again_does_nothing(target, wheels, machine):
    machine(None)
    target.pip_install(wheels["wheel"]["cu126"])
    r = target.apsi("pkg", "install", "torch-cuda", env={"APSI_TORCH_INDEX": "file:///nonexistent"})
    assert r.returncode == 0, r.all
    assert "PyTorch 2.6.0+cu126 is already installed" in r.stdout and "Downloading" not in r.stdout


def test_torch_auto_with_a_build_present_downloads_nothing(target, wheels, machine):
    machine("rtx4090-driver560")
    target.pip_install(wheels["wheel"]["cu126"])
    # an index that does not exist: any download would fail
    r = target.apsi("pkg", "install", "torch-auto", env={"APSI_TORCH_INDEX": "file:///nonexistent"})
    assert r.returncode == 0, r.all
    assert r.stdout.splitlines()[0] == ("torch-auto: NVIDIA GeForce RTX 4090 (compute 8.9), driver 560.35.03 "
                                        "→ torch-cuda: PyTorch ≥ 2.6 + CUDA 12.6")
    assert "PyTorch 2.6.0+cu126 (CUDA 12.6) suits this machine" in r.stdout
    assert "nothing is downloaded" in r.stdout and "Downloading" not in r.stdout
    assert target.torch() == "2.6.0+cu126"


def test_torch_auto_keeps_an_unsuitable_build_and_says_how_to_replace_it(target, wheels, machine):
    machine("rtx4090-driver560")
    target.pip_install(wheels["wheel"]["cpu"])
    r = target.apsi("pkg", "install", "torch-auto", env={"APSI_TORCH_INDEX": "file:///nonexistent"})
    assert r.returncode == 0, r.all
    assert ("PyTorch 2.13.0+cpu is the CPU build, but this machine has a GPU that torch-cuda would use"
            in r.stdout)
    assert "To replace it: apsi pkg install torch-cuda" in r.stdout
    assert target.torch() == "2.13.0+cpu"


def test_torch_auto_installs_the_chosen_build(target, wheels, machine):
    machine("rtx5090-driver570")
    r = target.apsi("pkg", "install", "torch-auto")
    assert r.returncode == 0, r.all
    assert f"from {wheels['base']}/cu128" in r.stdout
    assert target.torch() == "2.7.0+cu128"


def test_torch_auto_replaces_a_torch_older_than_2_3(target, wheels, machine):
    machine(None)
    target.pip_install(wheels["wheel"]["old"])
    r = target.apsi("pkg", "install", "torch-auto")
    assert r.returncode == 0, r.all
    assert target.torch() == "2.13.0+cpu"
    assert dist_infos(target) == ["torch-2.13.0+cpu.dist-info"]


def test_torch_auto_repairs_a_torch_that_does_not_import(target, wheels, machine):
    machine("rtx4090-driver560")
    target.pip_install(wheels["wheel"]["broken"])
    assert target.torch().startswith("ERROR: ImportError: libcudart.so.12")
    r = target.apsi("pkg", "install", "torch-auto")
    assert r.returncode == 0, r.all
    assert "does not import (ImportError: libcudart.so.12" in r.stderr and "will be reinstalled" in r.stderr
    assert target.torch() == "2.6.0+cu126"


def test_missing_wheel_leaves_the_old_build_working(target, wheels, machine):
    machine(None)
    target.pip_install(wheels["wheel"]["cu126"])
    r = target.apsi("pkg", "install", "torch-cu128", env={"APSI_TORCH_INDEX": wheels["partial"]})
    assert r.returncode == 1
    assert (f"error: no torch>=2.7,<2.12 wheel from {wheels['partial']}/cu128 matches Python "
            in r.stderr), r.all
    assert "Nothing was changed: PyTorch 2.6.0+cu126 (CUDA 12.6) is still installed." in r.stderr
    assert "Traceback" not in r.all
    assert target.torch() == "2.6.0+cu126"


def test_unreachable_index_leaves_the_old_build_working(target, wheels, machine):
    machine(None)
    target.pip_install(wheels["wheel"]["cu126"])
    r = target.apsi("pkg", "install", "torch-cu128", "--torch-index", "http://127.0.0.1:9/whl",
                    env={"PIP_RETRIES": "1"})
    assert r.returncode == 1
    assert "error: pip could not reach the package index from http://127.0.0.1:9/whl/cu128" in r.stderr, r.all
    assert "Nothing was changed: PyTorch 2.6.0+cu126 (CUDA 12.6) is still installed." in r.stderr
    assert target.torch() == "2.6.0+cu126"


def test_any_index_with_index_url(target, wheels, machine):
    machine(None)
    r = target.apsi("pkg", "install", "torch", "--index-url", f"{wheels['base']}/rocm6.2")
    assert r.returncode == 0, r.all
    assert target.torch() == "2.5.1+rocm6.2"
    r = target.apsi("pkg", "list")
    assert "PyTorch: 2.5.1+rocm6.2 — ROCm 6.2 build: AMD GPUs, and the CPU" in r.stdout


def test_dry_run_prints_the_plan_and_pip_commands(target, wheels, machine):
    machine("a100x2-driver580")
    r = target.apsi("pkg", "install", "torch-auto", "--dry-run")
    assert r.returncode == 0, r.all
    lines = r.stdout.splitlines()
    assert lines[0] == ("torch-auto: 2× NVIDIA A100-SXM4-80GB (compute 8.0), driver 580.65.06 → "
                        "torch-cu130: PyTorch ≥ 2.9 + CUDA 13.0")
    assert lines[2].endswith(f"-m pip download --no-deps --only-binary=:all: --dest '<temporary folder>' "
                             f"--index-url {wheels['base']}/cu130 'torch>=2.9'")
    assert f"-m pip install --index-url {wheels['base']}/cu130 " in lines[3]
    assert "torch" not in target.torch() or target.torch().startswith("ERROR")


def test_index_base_from_apsi_toml(target, wheels, machine, monkeypatch, tmp_path):
    machine(None)
    monkeypatch.delenv("APSI_TORCH_INDEX")
    (tmp_path / "apsi.toml").write_text(f'[pkg]\ntorch_index = "{wheels["base"]}/"\n')
    r = target.apsi("pkg", "install", "torch", "--dry-run")
    assert f"--index-url {wheels['base']}/cpu" in r.stdout, r.all


def test_bad_apsi_toml_is_a_clear_error(target, machine, monkeypatch, tmp_path):
    machine(None)
    monkeypatch.delenv("APSI_TORCH_INDEX")
    (tmp_path / "apsi.toml").write_text("[pkg]\ntorch_index = 3\n")
    r = target.apsi("pkg", "install", "torch", "--dry-run")
    assert r.returncode == 1
    assert "pkg.torch_index must be a URL string" in r.stderr and "Traceback" not in r.all


def test_list_and_uninstall(target, wheels, machine):
    machine(None)
    target.pip_install(wheels["wheel"]["cu126"])
    r = target.apsi("pkg", "list")
    assert r.returncode == 0, r.all
    assert f"Packages in {target.python}" in r.stdout
    assert any(line.split() == ["torch", "2.6.0+cu126"] for line in r.stdout.splitlines())
    assert r.stdout.rstrip().endswith("PyTorch: 2.6.0+cu126 — CUDA 12.6 build: NVIDIA GPUs, and the CPU")
    r = target.apsi("pkg", "uninstall", "torch-cuda")
    assert r.returncode == 0, r.all
    assert dist_infos(target) == []
    r = target.apsi("pkg", "list")
    assert "PyTorch: not installed (apsi pkg install torch-auto)" in r.stdout


def test_two_builds_at_once_is_a_usage_error(target, machine):
    machine(None)
    r = target.apsi("pkg", "install", "torch-cuda", "torch-cu128")
    assert r.returncode == 2
    assert "name one PyTorch build at a time" in r.stderr


def test_python_without_pip(target, machine, tmp_path):
    from . import helpers

    machine(None)
    bare = helpers.make_venv(tmp_path / "bare", with_pip=False)
    r = target.apsi("pkg", "install", "torch", env={"APSI_PYTHON": str(bare)})
    assert r.returncode == 1
    assert r.stderr.strip() == (f"error: pip is not installed in {bare}: "
                                f"run `{bare} -m ensurepip --upgrade`, then try again")


def test_bundles_dry_run(target, machine):
    machine("rtx4090-driver560")
    r = target.apsi("pkg", "install", "ai", "--dry-run")
    assert r.returncode == 0, r.all
    assert r.stdout.splitlines()[0].startswith("ai: NVIDIA GeForce RTX 4090 (compute 8.9)")
    assert r.stdout.rstrip().endswith("-m pip install onnxruntime transformers")
    r = target.apsi("pkg", "install", "ai-gpu", "numpy", "--dry-run")
    assert r.returncode == 0, r.all
    assert r.stdout.splitlines()[0] == "ai-gpu: torch-cuda: PyTorch ≥ 2.6 + CUDA 12.6"
    assert r.stdout.rstrip().endswith("-m pip install onnxruntime-gpu cupy-cuda12x transformers numpy")


def test_a_wheel_pip_cannot_install_leaves_the_old_build_working(target, wheels, machine, tmp_path):
    import zipfile

    from . import helpers

    machine(None)
    target.pip_install(wheels["wheel"]["cu126"])
    good = helpers.make_torch_wheel(tmp_path / "w", "2.7.0+cu128", cuda="12.8")
    bad = tmp_path / "bad" / good.name
    bad.parent.mkdir()
    with zipfile.ZipFile(good) as src, zipfile.ZipFile(bad, "w") as dst:
        for item in src.infolist():
            data = src.read(item)
            if item.filename.endswith("/WHEEL"):
                data = data.replace(b"Wheel-Version: 1.0", b"Wheel-Version: 9.0")
            dst.writestr(item, data)
    helpers.make_index(tmp_path / "idx", "cu128", [bad])
    r = target.apsi("pkg", "install", "torch-cu128", "--torch-index", (tmp_path / "idx").as_uri())
    assert r.returncode == 1, r.all
    assert r.stderr.count("error: ") == 1 and "Traceback" not in r.all
    assert "PyTorch 2.6.0+cu126 (CUDA 12.6) is" in r.stderr
    assert target.torch() == "2.6.0+cu126"


def test_ctrl_c_is_a_clear_message(target, wheels, machine, monkeypatch):
    from click.testing import CliRunner

    from apsi_cli import pipcmd
    from apsi_cli.main import cli

    machine(None)
    target.pip_install(wheels["wheel"]["cu126"])

    def interrupted(cmd, echo=True):
        raise KeyboardInterrupt

    monkeypatch.setattr(pipcmd, "run_pip", interrupted)
    r = CliRunner().invoke(cli, ["pkg", "install", "torch-cu128"])
    assert r.exit_code == 1
    assert r.stderr.strip().endswith("error: interrupted (Ctrl-C) before pip finished. "
                                     "PyTorch 2.6.0+cu126 (CUDA 12.6) is installed now.")
    assert target.torch() == "2.6.0+cu126"
