"""Model files are tested as users meet them: Apsi programs run by `python -m apsi` in a subprocess,
one process saving, another loading (bit for bit), and hostile files refused with a message."""

import subprocess
import sys

import pytest


def apsi(args, cwd, timeout=300):
    return subprocess.run([sys.executable, "-m", "apsi", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture
def run(tmp_path):
    def go(source, *flags, name="p.apsi"):
        (tmp_path / name).write_text(source)
        return apsi([*flags, name], tmp_path)
    return go
