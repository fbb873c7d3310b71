"""How pip's failures are told apart, and the torch family's pairing rule (no pip run: pip's own words)."""

from apsi_cli.packages import installer, pipcmd, torch_builds

INFO = {"python": {"version": "3.12.3", "platform": "linux-x86_64", "executable": "/venv/bin/python"}}
URL = "https://download.pytorch.org/whl/cu128"

NO_MATCH = ("Looking in indexes: https://download.pytorch.org/whl/cu128\n"
            "WARNING: Could not fetch URL https://download.pytorch.org/whl/cu128/torch/: 404 Client Error\n"
            "ERROR: Could not find a version that satisfies the requirement torch>=2.7 "
            "(from versions: none)\n"
            "ERROR: No matching distribution found for torch>=2.7\n")
OFFLINE = ("WARNING: Retrying (Retry(total=0, connect=None, read=None, redirect=None, status=None)) after "
           "connection broken by 'NewConnectionError(\"Failed to establish a new connection: [Errno 111] "
           "Connection refused\")': /whl/cu128/torch/\n"
           "ERROR: Could not find a version that satisfies the requirement torch>=2.7 (from versions: none)\n"
           "ERROR: No matching distribution found for torch>=2.7\n")


def test_no_matching_distribution_is_not_blamed_on_the_network():
    msg = pipcmd.explain_failure(NO_MATCH, "torch>=2.7,<2.12", URL, INFO)
    assert msg.startswith(f"no torch>=2.7,<2.12 wheel from {URL} matches Python 3.12.3 on linux-x86_64.")


def test_a_connection_error_before_it_is_a_network_failure():
    msg = pipcmd.explain_failure(OFFLINE, "torch>=2.7,<2.12", URL, INFO)
    assert msg.startswith(f"pip could not reach the package index from {URL} (network, proxy or mirror")


def test_a_missing_family_member_is_named():
    err = "ERROR: No matching distribution found for torchvision==0.22.*\n"
    msg = pipcmd.explain_failure(err, "torch-2.7.0+cu128-cp312-cp312-linux_x86_64.whl", URL, INFO)
    assert msg.startswith(f"the index from {URL} has no torchvision==0.22.* for Python 3.12.3 on "
                          "linux-x86_64, the torchvision release paired with torch-2.7.0+cu128")


def test_family_pairing():
    assert torch_builds.family_pin("torchvision", "2.12.0+cu130") == "torchvision==0.27.*"
    assert torch_builds.family_pin("torchaudio", "2.7.1+cu128") == "torchaudio==2.7.*"
    assert installer.family_mismatch("2.7.0+cu128", {"torchvision": "0.22.1+cu128", "torchaudio": None}) == ""
    assert installer.family_mismatch("2.7.0+cu128", {"torchvision": "0.22.0+cpu"}) == (
        "torchvision 0.22.0+cpu is a cpu build, PyTorch a cu128 one")
    assert installer.family_mismatch("2.7.0", {"torchaudio": "2.6.0"}) == (
        "torchaudio 2.6.0 belongs to another PyTorch (this one pairs with torchaudio 2.7)")
    # torchaudio 2.11 is the last release; it pairs with every later PyTorch, and from 2.11.1 on with any
    # CUDA build of the same major version (pytorch/audio#4226)
    assert torch_builds.family_pin("torchaudio", "2.14.0+cu132") == "torchaudio==2.11.*"
    assert torch_builds.family_pin("torchaudio", "2.11.0+cu130") == "torchaudio==2.11.*"
    assert torch_builds.family_pin("torchaudio", "2.10.0+cu128") == "torchaudio==2.10.*"
    assert installer.family_mismatch("2.14.0+cu132", {"torchaudio": "2.11.1+cu130"}) == ""
    assert installer.family_mismatch("2.14.0+cu132", {"torchaudio": "2.11.0+cu130"}) == (
        "torchaudio 2.11.0+cu130 is a cu130 build, PyTorch a cu132 one")
    assert installer.family_mismatch("2.14.0+cu132", {"torchaudio": "2.11.1+cu126"}) == (
        "torchaudio 2.11.1+cu126 is a cu126 build, PyTorch a cu132 one")
    assert installer.family_mismatch("2.13.0+cu130", {"torchaudio": "2.10.0+cu130"}) == (
        "torchaudio 2.10.0+cu130 belongs to another PyTorch (this one pairs with torchaudio 2.11)")
    assert installer.family_mismatch("2.11.0+cu130", {"torchaudio": "2.12.0+cu130"}) == (
        "torchaudio 2.12.0+cu130 belongs to another PyTorch (this one pairs with torchaudio 2.11)")


def test_a_torchaudio_the_index_lacks_says_it_is_the_last_release():
    err = "ERROR: No matching distribution found for torchaudio==2.11.*\n"
    msg = pipcmd.explain_failure(err, "torch-2.14.0+cu132-cp312-cp312-linux_x86_64.whl", URL, INFO)
    assert msg.startswith(f"the index from {URL} has no torchaudio==2.11.* for Python 3.12.3 on "
                          "linux-x86_64. torchaudio 2.11 is torchaudio's last release")
    assert "apsi pkg uninstall torchaudio" in msg


def test_torchvision_offline_from_the_pytorch_index_names_apsis_settings_of_it(monkeypatch, capsys):
    # `apsi pkg install torchvision` for an installed 2.13.0+cpu takes it from Apsi's PyTorch index: with
    # no network, the advice is that index's settings, not pip.conf's (which were set aside)
    offline = OFFLINE.replace("torch>=2.7", "torchvision==0.28.*").replace("/torch/", "/torchvision/")
    torch = {"found": True, "version": "2.13.0+cpu", "metadata_version": "2.13.0+cpu", "build": "cpu"}
    monkeypatch.setattr(pipcmd, "run_pip", lambda cmd, env=None: (1, offline))
    monkeypatch.setattr(pipcmd, "isolated_env", lambda python: ({}, []))
    monkeypatch.delenv("APSI_TORCH_INDEX", raising=False)
    req = installer.Request(names=("torchvision",), torch_index="https://mirror.example/whl")
    try:
        installer._install_family_only(req, ["torchvision"], "/venv/bin/python", {**INFO, "torch": torch})
    except installer.Exit as e:
        assert e.exit_code == 1
    err = capsys.readouterr().err
    assert "pip could not reach the package index from https://mirror.example/whl/cpu" in err
    assert "point Apsi at a mirror: --torch-index URL, APSI_TORCH_INDEX" in err
    assert "pip's own settings" not in err
