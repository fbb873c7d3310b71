"""`apsi FILE`, `apsi run FILE` and `apsi -e CODE` start without Click (apsi_cli/fast.py), and reach
the runner with exactly what the Click group would have given it; every other command line goes
through Click unchanged."""

import os
import subprocess
import sys

import pytest

from apsi_cli import fast, main, runner


def test_fast_flags_are_the_click_options():
    from apsi_cli import options

    click_flags, click_keys = set(), set()
    for make in options._FLAGS:
        opt = make(lambda **kw: None).__click_params__[0]
        click_flags.update(opt.opts)
        click_keys.add(opt.name)
    assert click_flags == set(fast.BOOL_FLAGS) | set(fast.SCOPED_FLAGS)
    assert click_keys == set(fast.PERM_KEYS)
    assert set(options.SCOPED_FLAGS) == set(fast.SCOPED_FLAGS)


@pytest.mark.parametrize("argv", [
    ["-e", "print(1)"],
    ["--allow-read", "-e", "print(1)", "a", "--allow-net", "-e"],
    ["-A", "--deny-net=example.org,b", "-e", ""],
    ["--allow-env=HOME", "--allow-env=PATH", "-e", "x", "y"],
    ["prog.apsi"],
    ["prog.apsi", "x", "--flag", "-e", "run"],
    ["--allow-python", "--allow-write=/tmp", "prog.apsi", "--allow-read"],
    ["run", "prog.apsi", "1"],
    ["--allow-read=/a", "run", "--allow-read=/b", "--deny-run", "prog.apsi", "--", "z"],
    ["--allow-net", "run", "run"],
    ["-", "a"],
    ["missing.apsi"],
    ["run", "-"],
])
def test_fast_path_gives_the_runner_what_click_gives(argv, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "prog.apsi").write_text("print(1)\n")
    calls = []
    monkeypatch.setattr(runner, "run_file", lambda *a, **k: calls.append(("file", a, k)) or 0)
    monkeypatch.setattr(runner, "run_code", lambda *a, **k: calls.append(("code", a, k)) or 0)
    monkeypatch.setattr(runner, "run_stdin", lambda *a, **k: calls.append(("stdin", a, k)) or 0)

    assert fast.dispatch(list(argv)) is not None, "this command line should not need Click"
    with pytest.raises(SystemExit) as quick:
        main.main(list(argv))
    monkeypatch.setattr(fast, "dispatch", lambda argv, prog_name="apsi": None)
    with pytest.raises(SystemExit) as slow:
        main.main(list(argv))
    assert quick.value.code == slow.value.code == 0
    assert len(calls) == 2 and calls[0] == calls[1], calls


@pytest.mark.parametrize("argv", [
    [], ["-i"], ["--help"], ["-h"], ["--version"], ["check", "x.apsi"], ["doctor"], ["-e"],
    ["--allow-python=1", "-e", "1"], ["-Ae", "1"], ["--bogus", "x.apsi"], ["run"], ["run", "--help"],
    ["run", "-e", "1"], ["--", "x.apsi"], ["-e", "-1"], ["folder"],
])
def test_everything_else_goes_through_click(argv, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "folder").mkdir()
    assert fast.dispatch(argv) is None


def _modules_after(argv, cwd):
    code = ("import sys\nfrom apsi_cli.main import main\n"
            f"try:\n    main({argv!r})\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('click', 'rich', 'numpy', 'torch')"
            " or m in ('platform', 'apsi_cli.group', 'apsi_cli.options')))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=cwd,
                       env={k: v for k, v in os.environ.items() if not k.startswith("APSI_")})
    return r.stdout.strip().splitlines()


def test_common_command_lines_do_not_import_click(tmp_path):
    (tmp_path / "p.apsi").write_text("print(2)\n")
    assert _modules_after(["-e", "print(1)"], tmp_path) == ["1", "[]"]
    assert _modules_after(["p.apsi"], tmp_path) == ["2", "[]"]
    assert _modules_after(["--allow-read", "run", "p.apsi"], tmp_path) == ["2", "[]"]
    # and the rest still has Click
    assert "click" in _modules_after(["--version"], tmp_path)[-1]


def test_ctrl_c_outside_the_program_exits_130_on_both_paths(monkeypatch, capsys):
    def interrupted(*a, **k):
        raise KeyboardInterrupt
    monkeypatch.setattr(runner, "run_code", interrupted)
    results = []
    for fast_path in (True, False):
        if not fast_path:
            monkeypatch.setattr(fast, "dispatch", lambda argv, prog_name="apsi": None)
        with pytest.raises(SystemExit) as e:
            main.main(["-e", "1"])
        results.append((e.value.code, capsys.readouterr().err))
    assert results[0] == results[1] == (130, "\napsi: interrupted (Ctrl-C)\n")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc arenas")
def test_the_program_thread_allocates_from_the_main_heap():
    """A program's thread shares glibc's main arena (apsi_cli/arena.py): a thread arena unmaps its
    heaps as they empty, so each training step's large temporaries came back as fresh pages."""
    code = ("import ctypes\nfrom apsi_cli import runner\n"
            "def action():\n    import numpy as np\n    for _ in range(3):\n"
            "        a = np.ones((4096, 1024))\n        del a\n"
            "assert runner.guarded(action) == 0\n"
            "ctypes.CDLL(None).malloc_stats()\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    if "Arena" not in r.stderr:
        pytest.skip("not glibc")
    assert r.stderr.count("Arena ") == 1, r.stderr
