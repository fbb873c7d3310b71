"""What installs an optional part of Apsi (the `jupyter` or `lsp` extra) into the Python that runs it.

`pip install 'apsi[jupyter]'` was the advice, but Apsi is installed from its source folder
(`pip install -e .`): that command asks the package index for a project named apsi, which is another
one or none, and a bare `pip` may be another Python's. `apsi pkg install` installs into Apsi's own
Python; the requirements are read from this installation's metadata, so they never drift from
pyproject.toml.
"""

import shlex

# pyproject.toml's extras, for a source tree run without its metadata (no `pip install -e .` yet)
FALLBACK = {"jupyter": ["ipykernel>=6.29", "jupyter_client>=8"],
            "lsp": ["pygls>=2.0", "lsprotocol>=2024.0.0"]}


def requirements(extra):
    """The requirements the extra adds, as pip spells them: ['ipykernel>=6.29', …]."""
    from importlib.metadata import PackageNotFoundError, requires

    from packaging.requirements import Requirement

    try:
        listed = requires("apsi") or []
    except PackageNotFoundError:
        listed = []
    found = []
    for text in listed:
        req = Requirement(text)
        if req.marker is not None and req.marker.evaluate({"extra": extra}):
            req.marker = None
            found.append(str(req))
    return found or FALLBACK[extra]


def install_command(extra):
    """`apsi pkg install 'ipykernel>=6.29' 'jupyter_client>=8'`: the command a message shows."""
    return "apsi pkg install " + " ".join(shlex.quote(r) for r in requirements(extra))
