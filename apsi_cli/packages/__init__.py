"""The machinery behind `apsi pkg` and `apsi doctor`: the target Python and pip (pipcmd.py), what this
machine's hardware is (hardware/), the PyTorch builds (torch_builds.py: plain data) and torch-auto's
choice among them (torch_choice.py), and carrying out an install (installer.py). The commands themselves
are apsi_cli/pkg_cmd.py, doctor.py and setup_wizard.py."""
