"""Issue 15: `apsi check p1/a.apsi p2/b.apsi` failed with "Permission denied" on the second folder: the
kernel's confinement was stacked once per file. Each file is now checked in its own process."""

import subprocess
import sys


def apsi(args, cwd):
    return subprocess.run([sys.executable, "-m", "apsi", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120)


def test_files_in_two_project_folders(tmp_path):
    for folder, text in (("p1", "print(1)\n"), ("p2", "print(2)\n")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "main.apsi").write_text(text)
    r = apsi(["check", "p1/main.apsi", "p2/main.apsi"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert "Permission denied" not in r.stderr


def test_an_error_in_the_second_file_is_reported_with_exit_2(tmp_path):
    (tmp_path / "p1").mkdir()
    (tmp_path / "p2").mkdir()
    (tmp_path / "p1" / "a.apsi").write_text("print(1)\n")
    (tmp_path / "p2" / "b.apsi").write_text("print(undefined_name)\n")
    r = apsi(["check", "--allow-read", "p1/a.apsi", "p2/b.apsi"], tmp_path)
    assert r.returncode == 2 and "p2/b.apsi:1:7: undefined name 'undefined_name'" in r.stderr, r.stderr
