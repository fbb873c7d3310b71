"""A new user's first hour: the mistakes they make on the command line and in apsi.toml, and what
`apsi` answers. Each message says what happened, where, and what to do, without a Python traceback."""

import os
import subprocess
import sys

APSI = [sys.executable, "-m", "apsi"]


def run(args, cwd, stdin=None):
    env = {k: v for k, v in os.environ.items() if k != "APSI_DEBUG"}
    return subprocess.run(APSI + args, cwd=cwd, input=stdin, capture_output=True, text=True, env=env,
                          timeout=120)


def test_a_misspelt_command_is_named(tmp_path):
    for typed, meant in (("doctr", "doctor"), ("rn", "run"), ("check-torh", "check-torch")):
        r = run([typed], tmp_path)
        assert r.returncode == 2 and r.stdout == ""
        assert f"cannot run '{typed}': it does not exist (did you mean the command `apsi {meant}`?)" \
            in r.stderr


def test_a_program_named_without_apsi_or_misspelt_is_named(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.apsi").write_text('print("ok")\n')
    r = run(["src/train"], tmp_path)
    assert r.returncode == 2 and "(did you mean src/train.apsi?)" in r.stderr
    r = run(["src/trian.apsi"], tmp_path)
    assert r.returncode == 2 and "(did you mean src/train.apsi?)" in r.stderr
    r = run(["src/unrelated.apsi"], tmp_path)         # nothing alike: no guess
    assert r.returncode == 2 and "did you mean" not in r.stderr


def test_check_of_a_missing_file_shows_checks_usage(tmp_path):
    r = run(["check", "gone.apsi"], tmp_path)
    assert r.returncode == 2
    assert "cannot check 'gone.apsi': it does not exist. Usage: apsi check FILE.apsi..." in r.stderr


def test_a_permission_flag_after_the_program_is_explained(tmp_path):
    (tmp_path / "py.apsi").write_text('print(args)\nlet m = pyimport("math")\n')
    r = run(["py.apsi", "--allow-python", "--allow-net=x.org"], tmp_path)
    assert r.returncode == 1
    assert r.stdout == '["--allow-python", "--allow-net=x.org"]\n'      # still the program's arguments
    assert ("apsi: --allow-python came after py.apsi, so the program got it as an argument (in `args`), "
            "not as a permission: put permission flags before the program: apsi --allow-python py.apsi"
            in r.stderr)
    assert "--allow-net=x.org came" not in r.stderr                      # not the refused permission
    r = run(["-e", 'pyimport("math")', "-A"], tmp_path)
    assert r.returncode == 1 and "apsi: -A came after -e CODE" in r.stderr
    r = run(["py.apsi", "--allow-net"], tmp_path)                        # another permission: no note
    assert r.returncode == 1 and "came after" not in r.stderr


def _caret_pair(stderr):
    """The first source line shown and the caret line under it."""
    lines = stderr.splitlines()
    return next((a, b) for a, b in zip(lines, lines[1:], strict=False) if b.strip() == "^")


def test_a_long_line_is_cut_around_the_error(tmp_path):
    (tmp_path / "long.apsi").write_text('let s = "' + "a" * 100_000 + '" + 1\n')
    r = run(["long.apsi"], tmp_path)
    assert r.returncode == 1 and "long.apsi:1:100012: error: cannot add an int to a str" in r.stderr
    assert len(r.stderr) < 2_000                  # was the whole line, twice
    shown, caret = _caret_pair(r.stderr)
    assert shown.startswith("    …aaa") and shown[caret.index("^")] == "+"
    # a syntax error at the end of a long last line (no newline after it)
    (tmp_path / "last.apsi").write_text("print(1)\nlet x = " + "1 + " * 30_000 + ")")
    r = run(["last.apsi"], tmp_path)
    assert r.returncode == 2 and r.stdout == "" and len(r.stderr) < 1_000
    shown, caret = _caret_pair(r.stderr)
    assert shown.endswith("1 + 1 + )") and shown[caret.index("^")] == ")"


def test_the_caret_stands_under_the_error_after_wide_characters(tmp_path):
    r = run(["-e", 'print("日本語" + 1)'], tmp_path)
    assert r.returncode == 1
    # print(" is 7 cells, 日本語 6 (each two wide), then '" ' 2: the '+' is in cell 15
    assert _caret_pair(r.stderr) == ('    print("日本語" + 1)', "    " + " " * 15 + "^")
    r = run(["-e", 'let s = "🎉" + ¿'], tmp_path)
    assert r.returncode == 2
    # let s = " is 9 cells, 🎉 2, '" + ' 4: the ¿ is in cell 15
    assert _caret_pair(r.stderr) == ('    let s = "🎉" + ¿', "    " + " " * 15 + "^")
