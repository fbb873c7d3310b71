"""Without the optional packages ([jupyter], [lsp]) the commands say what to install, in one line."""

import subprocess
import sys

import pytest


def run_without(modules, argv):
    code = ("import sys\n"
            f"for m in {modules!r}:\n    sys.modules[m] = None\n"
            "from apsi_cli.main import main\n"
            f"main({argv!r})\n")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("modules, argv, says", [
    (["pygls", "lsprotocol"], ["lsp"], "pip install 'apsi[lsp]'"),
    (["jupyter_client"], ["kernel", "install", "--user"], "pip install 'apsi[jupyter]'"),
])
def test_a_command_says_which_extra_to_install(modules, argv, says):
    result = run_without(modules, argv)
    assert result.returncode == 1 and says in result.stderr and "Traceback" not in result.stderr


def test_the_kernel_itself_says_which_extra_to_install():
    code = ("import sys\nsys.modules['ipykernel'] = None\n"
            "from apsi_cli.kernel.__main__ import main\nsys.exit(main([]))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "pip install 'apsi[jupyter]'" in result.stderr
