"""Without the optional packages ([jupyter], [lsp]) the commands say what to install, in one line:
`apsi pkg install` of the extra's requirements, into the Python that runs Apsi. (`pip install
'apsi[lsp]'` was the advice: it asks the package index for a project named apsi, which is not this one,
with whatever `pip` is first on PATH.)"""

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

EXTRAS = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())["project"][
    "optional-dependencies"]


def install(extra):
    return "apsi pkg install " + " ".join(f"'{req}'" for req in EXTRAS[extra])


def run_without(modules, argv):
    code = ("import sys\n"
            f"for m in {modules!r}:\n    sys.modules[m] = None\n"
            "from apsi_cli.main import main\n"
            f"main({argv!r})\n")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("modules, argv, says", [
    (["pygls", "lsprotocol"], ["lsp"], install("lsp")),
    (["jupyter_client"], ["kernel", "install", "--user"], install("jupyter")),
])
def test_a_command_says_which_extra_to_install(modules, argv, says):
    result = run_without(modules, argv)
    assert result.returncode == 1 and says in result.stderr and "Traceback" not in result.stderr
    assert "apsi[" not in result.stderr


def test_the_kernel_itself_says_which_extra_to_install():
    code = ("import sys\nsys.modules['ipykernel'] = None\n"
            "from apsi_cli.kernel.__main__ import main\nsys.exit(main([]))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and install("jupyter") in result.stderr


def test_the_extras_fallback_is_pyprojects():
    from apsi_cli import extras

    assert extras.FALLBACK == {k: EXTRAS[k] for k in extras.FALLBACK}
    assert extras.requirements("lsp") == EXTRAS["lsp"]
