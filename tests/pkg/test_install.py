"""`apsi pkg install/list/uninstall` with real pip into a throwaway venv, from local file:// indexes."""

import os

import pytest

from tests.conftest import trust_toml

from . import helpers

pytestmark = pytest.mark.slow


def dist_infos(target):
    return sorted(p.name for p in target.site.glob("torch-*.dist-info"))


def test_explicit_build_uses_its_index(target, wheels, machine):
    machine(None)
    r = target.apsi("pkg", "install", "torch-cuda")
    assert r.returncode == 0, r.all
    assert "torch-cuda: PyTorch 2.6–2.14 + CUDA 12.6" in r.stdout
    assert (f"PyTorch and its dependencies come from {wheels['base']} (APSI_TORCH_INDEX), not from "
            "PyTorch's own index.") in r.stdout
    assert f"Downloading torch>=2.6,<2.15 from {wheels['base']}/cu126" in r.stdout
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
                                        "→ torch-cuda: PyTorch 2.6–2.14 + CUDA 12.6")
    assert "PyTorch 2.6.0+cu126 (CUDA 12.6) suits this machine" in r.stdout
    assert "nothing is downloaded" in r.stdout and "Downloading" not in r.stdout
    assert target.torch() == "2.6.0+cu126"


def test_torch_auto_with_an_unsuitable_build_says_what_it_would_do_and_does_it_with_yes(target, wheels,
                                                                                       machine):
    machine("rtx4090-driver560")
    target.pip_install(wheels["wheel"]["cpu"])
    r = target.apsi("pkg", "install", "torch-auto", env={"APSI_TORCH_INDEX": "file:///nonexistent"})
    assert r.returncode == 1, r.all                   # never "success" with nothing useful installed
    assert ("PyTorch 2.13.0+cpu is the CPU build, but this machine has a GPU that torch-cuda would use"
            in r.stdout)
    assert "torch-auto would install torch-cuda: PyTorch 2.6–2.14 + CUDA 12.6 in its place." in r.stdout
    assert r.stderr.strip() == ("error: nothing was installed, and PyTorch 2.13.0+cpu does not suit this "
                                "machine. To replace it, run `apsi pkg install torch-auto --yes`.")
    assert target.torch() == "2.13.0+cpu"
    r = target.apsi("pkg", "install", "torch-auto", "--yes")
    assert r.returncode == 0, r.all
    assert target.torch() == "2.6.0+cu126"


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
    assert "could not reach" not in r.stderr
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
                        "torch-cu132: PyTorch ≥ 2.12 + CUDA 13.2")
    assert lines[3].endswith(f"-m pip download --no-deps --only-binary=:all: --dest '<temporary folder>' "
                             f"--index-url {wheels['base']}/cu132 'torch>=2.12'")
    assert f"-m pip install --index-url {wheels['base']}/cu132 " in lines[4]
    assert "torch" not in target.torch() or target.torch().startswith("ERROR")


def test_index_base_from_apsi_toml(target, wheels, machine, monkeypatch, tmp_path):
    machine(None)
    monkeypatch.delenv("APSI_TORCH_INDEX")
    (tmp_path / "apsi.toml").write_text(f'[pkg]\ntorch_index = "{wheels["base"]}/"\n')
    trust_toml(tmp_path / "apsi.toml")
    r = target.apsi("pkg", "install", "torch", "--dry-run")
    assert f"--index-url {wheels['base']}/cpu" in r.stdout, r.all


def test_bad_apsi_toml_is_a_clear_error(target, machine, monkeypatch, tmp_path):
    machine(None)
    monkeypatch.delenv("APSI_TORCH_INDEX")
    (tmp_path / "apsi.toml").write_text("[pkg]\ntorch_index = 3\n")
    trust_toml(tmp_path / "apsi.toml")
    r = target.apsi("pkg", "install", "torch", "--dry-run")
    assert r.returncode == 1
    assert "pkg.torch_index must be a URL string" in r.stderr and "Traceback" not in r.all


def test_list_and_uninstall(target, wheels, machine):
    machine(None)
    target.pip_install(wheels["wheel"]["cu126"])
    target.pip_install(wheels["wheel"]["tv-cu126"])
    r = target.apsi("pkg", "list")
    assert r.returncode == 0, r.all
    assert f"Packages in {target.python}" in r.stdout
    assert any(line.split() == ["torch", "2.6.0+cu126"] for line in r.stdout.splitlines())
    assert r.stdout.rstrip().endswith("PyTorch: 2.6.0+cu126 — CUDA 12.6 build: NVIDIA GPUs, and the CPU")
    r = target.apsi("pkg", "uninstall", "torch-cuda")
    assert r.returncode == 0, r.all
    assert "torchvision goes with PyTorch (it was built for it)." in r.stdout
    assert dist_infos(target) == [] and helpers.installed(target.python, "torchvision") is None
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
    assert r.stdout.splitlines()[0] == "ai-gpu: torch-cuda: PyTorch 2.6–2.14 + CUDA 12.6"
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

    from apsi_cli.main import cli
    from apsi_cli.packages import pipcmd

    machine(None)
    target.pip_install(wheels["wheel"]["cu126"])

    def interrupted(cmd, echo=True, env=None):
        raise KeyboardInterrupt

    monkeypatch.setattr(pipcmd, "run_pip", interrupted)
    r = CliRunner().invoke(cli, ["pkg", "install", "torch-cu128"])
    assert r.exit_code == 130
    assert r.stderr.strip().endswith("error: interrupted (Ctrl-C) before pip finished. "
                                     "PyTorch 2.6.0+cu126 (CUDA 12.6) is installed now.")
    assert target.torch() == "2.6.0+cu126"


def test_extra_indexes_and_find_links_are_not_mixed_in(target, wheels, machine, tmp_path):
    machine(None)
    conf = tmp_path / "pip.conf"
    conf.write_text(f"[global]\nextra-index-url = {wheels['pypi']}\n")
    env = {"PIP_CONFIG_FILE": str(conf), "PIP_EXTRA_INDEX_URL": wheels["pypi"],
           "PIP_FIND_LINKS": wheels["links"]}
    r = target.apsi("pkg", "install", "torch", env=env)
    assert r.returncode == 0, r.all
    assert target.torch() == "2.13.0+cpu"               # not 2.99.0+cu130 (extra index) or 2.98.0 (links)
    (line,) = [ln for ln in r.stdout.splitlines() if ln.startswith("(pip runs without ")]
    assert line.endswith(", so only that index is used)")
    assert all(name in line for name in ("PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS", "global.extra-index-url"))


def test_a_wheel_with_another_build_tag_is_refused(target, wheels, machine, tmp_path):
    machine(None)
    target.pip_install(wheels["wheel"]["cu126"])
    cpu = helpers.make_torch_wheel(tmp_path / "w", "2.7.0+cpu")
    helpers.make_index(tmp_path / "bad", "cu128", [cpu])                 # a mirror with a mix-up
    r = target.apsi("pkg", "install", "torch-cu128", "--torch-index", (tmp_path / "bad").as_uri())
    assert r.returncode == 1
    assert (f"error: the index {(tmp_path / 'bad').as_uri()}/cu128 offered torch-2.7.0+cpu-py3-none-any.whl, "
            "which is not a torch-cu128 build (its tag is +cpu); nothing was changed: PyTorch 2.6.0+cu126 "
            "(CUDA 12.6) is still installed.") in r.stderr, r.all
    assert target.torch() == "2.6.0+cu126"


def test_the_build_installed_is_checked_after_the_install(target, wheels, machine, tmp_path):
    # a wheel named +cu128 whose torch/version.py says it is a CPU build: pip succeeds, Apsi does not
    machine(None)
    odd = helpers.make_torch_wheel(tmp_path / "w", "2.7.0+cu128", reports="2.7.0+cpu")
    helpers.make_index(tmp_path / "odd", "cu128", [odd])
    url = f"{(tmp_path / 'odd').as_uri()}/cu128"
    r = target.apsi("pkg", "install", "torch-cu128", "--torch-index", (tmp_path / "odd").as_uri())
    assert r.returncode == 1
    assert (f"error: pip reported success, but the PyTorch in {target.python} is now 2.7.0+cpu (cpu), not "
            f"the 2.7.0+cu128 (cu128) wheel Apsi downloaded from {url}.") in r.stderr, r.all
    assert "Installed PyTorch" not in r.stdout


def test_a_package_left_needing_the_old_pytorch_is_named(target, wheels, machine, tmp_path):
    # pip exits 0 after "ERROR: pip's dependency resolver …": Apsi says which package that leaves behind
    machine(None)
    target.pip_install(wheels["wheel"]["cu126"])
    target.pip_install(helpers.make_wheel(tmp_path / "w", "needs-torch-26", "1.0", requires=["torch==2.6.0"]))
    r = target.apsi("pkg", "install", "torch-cu128")
    assert r.returncode == 0, r.all
    assert ("! needs-torch-26 1.0 needs torch==2.6.0, and PyTorch is now 2.7.0+cu128 (pip's dependency "
            "resolver said so above): it may not work. Update it with `apsi pkg install needs-torch-26`") \
        in r.stderr, r.all
    assert target.torch() == "2.7.0+cu128"


def test_the_family_moves_with_the_build(target, wheels, machine):
    machine(None)
    target.pip_install(wheels["wheel"]["cu126"])
    target.pip_install(wheels["wheel"]["tv-cu126"])
    r = target.apsi("pkg", "install", "torch-cu128")
    assert r.returncode == 0, r.all
    assert "with torchvision==0.22.*" in r.stdout
    assert "Installed PyTorch 2.7.0+cu128 (CUDA 12.8) with torchvision 0.22.0+cu128" in r.stdout
    assert target.torch() == "2.7.0+cu128"
    assert helpers.installed(target.python, "torchvision") == "0.22.0+cu128"


def test_asking_for_torchvision_keeps_the_build_and_takes_it_from_the_same_index(target, wheels, machine):
    machine(None)
    target.pip_install(wheels["wheel"]["cu126"])
    r = target.apsi("pkg", "install", "torchvision", "torchaudio")
    assert r.returncode == 0, r.all
    assert (f"torchvision==0.21.*, torchaudio==2.6.*: paired with the installed PyTorch 2.6.0+cu126, from "
            f"{wheels['base']}/cu126.") in r.stdout
    assert target.torch() == "2.6.0+cu126"
    assert helpers.installed(target.python, "torchvision") == "0.21.0+cu126"
    assert helpers.installed(target.python, "torchaudio") == "2.6.0+cu126"


def test_torchaudio_2_11_pairs_with_every_later_pytorch(target, wheels, machine):
    # torchaudio 2.11 is its last release: a build of 2.12 or newer takes it along, not a torchaudio 2.13
    # that does not exist
    machine(None)
    target.pip_install(wheels["wheel"]["cu126"])
    target.pip_install(wheels["wheel"]["ta-cu126"])
    r = target.apsi("pkg", "install", "torch")
    assert r.returncode == 0, r.all
    assert "with torchaudio==2.11.*" in r.stdout
    assert "Installed PyTorch 2.13.0+cpu (CPU) with torchaudio 2.11.1+cpu" in r.stdout
    assert helpers.installed(target.python, "torchaudio") == "2.11.1+cpu"
    helpers.remove_dists(target.site, ("torchaudio",))
    r = target.apsi("pkg", "install", "torchaudio")
    assert r.returncode == 0, r.all
    assert "torchaudio==2.11.*: paired with the installed PyTorch 2.13.0+cpu" in r.stdout
    assert helpers.installed(target.python, "torchaudio") == "2.11.1+cpu"


def test_packages_that_depend_on_torch_never_replace_the_build(target, wheels, machine):
    machine(None)
    target.pip_install(wheels["wheel"]["cu126"])
    r = target.apsi("pkg", "install", "needs-any-torch", "--index-url", wheels["pypi"])
    assert r.returncode == 0, r.all
    assert "PyTorch 2.6.0+cu126 was kept as it is." in r.stdout
    assert target.torch() == "2.6.0+cu126"              # the index's torch 2.99.0+cu130 was not taken
    r = target.apsi("pkg", "install", "needs-new-torch", "--index-url", wheels["pypi"])
    assert r.returncode == 1
    assert ("error: needs-new-torch needs a different PyTorch than the one installed, and Apsi keeps the "
            "installed build") in r.stderr, r.all
    assert target.torch() == "2.6.0+cu126"


def test_a_missing_dependency_on_a_mirror_is_no_network_failure(target, wheels, machine, tmp_path):
    machine(None)
    target.pip_install(wheels["wheel"]["cu126"])
    needy = helpers.make_torch_wheel(tmp_path / "w", "2.7.0+cu128", cuda="12.8", requires=["nvidia-fake-dep"])
    helpers.make_index(tmp_path / "mirror", "cu128", [needy])
    r = target.apsi("pkg", "install", "torch-cu128", "--torch-index", (tmp_path / "mirror").as_uri())
    assert r.returncode == 1
    assert (f"error: torch-2.7.0+cu128-py3-none-any.whl needs nvidia-fake-dep, and the index from "
            f"{(tmp_path / 'mirror').as_uri()}/cu128 has no nvidia-fake-dep") in r.stderr, r.all
    assert "could not reach" not in r.stderr
    assert "PyTorch 2.6.0+cu126 (CUDA 12.6) is installed now." in r.stderr
    assert target.torch() == "2.6.0+cu126"


def test_an_index_from_apsi_toml_needs_yes(target, wheels, machine, monkeypatch, tmp_path):
    machine(None)
    monkeypatch.delenv("APSI_TORCH_INDEX")
    (tmp_path / "apsi.toml").write_text(f'[pkg]\ntorch_index = "{wheels["base"]}"\n')
    trust_toml(tmp_path / "apsi.toml")
    r = target.apsi("pkg", "install", "torch")
    assert r.returncode == 1
    assert (f"PyTorch and its dependencies come from {wheels['base']} ([pkg] torch_index in "
            f"{tmp_path / 'apsi.toml'}), not from PyTorch's own index.") in r.stdout
    assert f"error: not downloading from {wheels['base']}: it was set by [pkg] torch_index" in r.stderr
    assert "Downloading" not in r.stdout and target.torch().startswith("ERROR")
    r = target.apsi("pkg", "install", "torch", "--yes")
    assert r.returncode == 0, r.all
    assert target.torch() == "2.13.0+cpu"


def test_externally_managed_python_is_refused_before_any_download(target, wheels, machine, tmp_path):
    machine(None)
    stdlib = tmp_path / "stdlib"
    stdlib.mkdir()
    (stdlib / "EXTERNALLY-MANAGED").write_text("[externally-managed]\nError=use apt\n")
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(      # the venv's Python plays a system one
        "import sys, sysconfig\n_get = sysconfig.get_path\n"
        f"sysconfig.get_path = lambda n, *a, **k: {str(stdlib)!r} if n == 'stdlib' else _get(n, *a, **k)\n"
        "sys.base_prefix = sys.prefix\n")
    path = f"{site}:{os.environ.get('PYTHONPATH', '')}"
    r = target.apsi("pkg", "install", "torch", env={"PYTHONPATH": path})
    assert r.returncode == 1
    marker = stdlib / "EXTERNALLY-MANAGED"
    assert f"error: {target.python} is externally managed (PEP 668: {marker})" in r.stderr
    assert "Nothing was downloaded." in r.stderr and f"{target.python} -m venv ~/.venvs/apsi" in r.stderr
    assert "Downloading" not in r.stdout

