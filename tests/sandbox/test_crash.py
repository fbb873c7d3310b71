"""Class 6: no program crashes the interpreter. Deep recursion, through C code too, is the Apsi error
"too many nested calls"; programs run on a big-stack thread and still exit, flush and stop on Ctrl-C
as before."""

import signal
import subprocess
import sys
import time

import pytest

from apsi_lang import bigstack

from .helpers import ROOT, cli, cli_cases, outcome

DEEP = "let t = []\nfor i in range(30000):\n    t = [t]\n"


DEEP_PROGRAMS = [
    "fn f(x):\n    return sorted([x], key=f)\nf(0)",
    "fn f(x):\n    return min([x], key=f)\nf(0)",
    "fn f(x):\n    return max([x, x], key=f)\nf(0)",
    "fn f(x):\n    return map(f, [x])\nf(0)",
    "fn f(x):\n    return filter(f, [x])\nf(0)",
    "fn f(x):\n    let xs = [x]\n    xs.sort(key=f)\n    return xs\nf(0)",
    "let f = fn(x) => sorted([x], key=f)\nf(0)",
    DEEP + "print(str(t))",
    DEEP + "print(t)",
    DEEP + 'print(f"{t}")',
    DEEP + "let u = []\nfor i in range(30000):\n    u = [u]\nprint(t == u)",
    "let t = ()\nfor i in range(30000):\n    t = (t,)\nlet u = ()\nfor i in range(30000):\n"
    "    u = (u,)\nprint(t == u)",
    "use nn\nfn f(x):\n    return tree_map(f, [x])\nf(1.0)",
    "fn f(x):\n    return any(map(f, [x]))\nf(0)",
    'fn f(x):\n    return "".join(map(f, [x]))\nf(0)',
    "fn f(x):\n    return list(zip(*map(f, [x])))\nf(0)",
    "fn f(x):\n    return sorted([x, x], key=fn(y) => f(y))\nf(0)",
    DEEP + "let u = []\nfor i in range(30000):\n    u = [u]\nprint(sorted([t, u]))",
    DEEP + "let u = []\nfor i in range(30000):\n    u = [u]\nprint(max(t, u))",
    DEEP + "print([1].index(t))",
    DEEP + "error(t)",
    "let r = {a: 1}\nfor i in range(30000):\n    r = {a: r}\nlet s = {a: 1}\nfor i in range(30000):\n"
    "    s = {a: s}\nprint(r == s)",
    "let m = {:}\nfor i in range(30000):\n    m = {\"a\": m}\nprint(m)",
    "let xs = []\nxs.append(xs)\nprint(xs)",
    "let t = ()\nfor i in range(1000000):\n    t = (t,)\nprint(set([t]))",
]


@pytest.fixture(scope="module")
def deep_runs(tmp_path_factory):
    return cli_cases(tmp_path_factory.mktemp("deep"), DEEP_PROGRAMS, "deep.apsi")


@pytest.mark.parametrize("code", DEEP_PROGRAMS)
def test_deep_recursion_is_an_apsi_error(deep_runs, code):
    rc, out, err = outcome(deep_runs, code)
    assert rc == 1, (rc, err[-300:])
    assert "too many nested calls" in err and 'File "' not in err


def test_deep_recursion_in_a_used_module_and_in_e(tmp_path):
    (tmp_path / "helpers.apsi").write_text("fn f(x):\n    return sorted([x], key=f)\n")
    (tmp_path / "main.apsi").write_text("use helpers\nf(0)\n")
    rc, out, err = cli(["main.apsi"], tmp_path)
    assert rc == 1 and "too many nested calls" in err
    rc, out, err = cli(["-e", "fn f(x):\n    return min([x], key=f)\nf(0)"], tmp_path)
    assert rc == 1 and "too many nested calls" in err


def test_exit_codes_and_output_order_survive_the_thread(tmp_path):
    rc, out, err = cli(["-e", 'print("a")\nexit(3)'], tmp_path)
    assert (rc, out) == (3, "a\n")
    rc, out, err = cli(["-e", 'print("before")\nerror("boom")'], tmp_path)
    assert rc == 1 and out == "before\n" and "boom" in err
    rc, out, err = cli(["-i"], tmp_path, stdin="fn f(x):\n    return sorted([x], key=f)\n\nf(0)\nprint(5)\n")
    assert "too many nested calls" in err and "5" in out


def test_ctrl_c_stops_a_running_program_with_130(tmp_path):
    (tmp_path / "loop.apsi").write_text('print("started")\nlet i = 0\nwhile true:\n    i += 1\n')
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "PYTHONUNBUFFERED": "1"}
    # (a shell's background job ignores SIGINT, and so would the child: give it the default handler)
    p = subprocess.Popen([sys.executable, "-m", "apsi", "loop.apsi"], cwd=tmp_path, env=env, text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert p.stdout.readline() == "started\n"
    time.sleep(0.2)
    p.send_signal(signal.SIGINT)
    try:
        out, err = p.communicate(timeout=30)
    finally:
        p.kill()
    assert p.returncode == 130 and "interrupted" in err


def test_call_returns_raises_and_nests():
    assert bigstack.call(lambda: 41 + 1) == 42
    assert bigstack.call(lambda: bigstack.call(lambda: "inner")) == "inner"
    with pytest.raises(ZeroDivisionError):
        bigstack.call(lambda: 1 / 0)
    with pytest.raises(SystemExit):
        bigstack.call(lambda: sys.exit(4))


CHAINS = [
    # CPython frees (and steps through) a chain of enumerate objects recursively in C, one frame
    # per link: Apsi's enumerate and zip take another one's items as a list, so no chain forms
    "let z = enumerate([1])\nfor i in range(1000000):\n    z = enumerate(z)\nfor x in z:\n    print(1)",
    "let z = zip([1])\nfor i in range(1000000):\n    z = zip(z, [2])\nprint(len(list(z)))",
    "let z = enumerate([1])\nfor i in range(1000000):\n    z = enumerate(z)\nprint(2)",
]


@pytest.fixture(scope="module")
def chain_runs(tmp_path_factory):
    return cli_cases(tmp_path_factory.mktemp("chains"), CHAINS, "chain.apsi", timeout=120)


@pytest.mark.parametrize("code", CHAINS)
def test_iterator_chains_never_crash(chain_runs, code):
    rc, out, err = outcome(chain_runs, code)
    assert rc in (0, 1) and "Fatal" not in err, (rc, err[-300:])
    assert rc == 0 or "too many nested calls" in err


def test_enumerate_and_zip_still_behave_as_pythons(tmp_path):
    rc, out, err = cli(["-e", 'let z = zip([1, 2, 3], "abc")\nfor x in z:\n    break\n'
                        'print(list(enumerate(z, 10)), list(zip([1], [2], strict=true)), type(zip([1])))'],
                       tmp_path)
    assert (rc, out) == (0, '[(10, (2, "b")), (11, (3, "c"))] [(1, 2)] zip\n'), err


@pytest.mark.slow
def test_a_tuple_deeper_than_the_old_stack_hashes(tmp_path):
    """Hashing a tuple has no recursion limit in CPython (one C frame per level, ~56 bytes): the
    program's stack is as large as memory, so 10 million levels (beyond 512 MiB) still hash."""
    if bigstack.stack_sizes()[0] < 2 << 30:
        pytest.skip("this machine has too little memory for the test")
    (tmp_path / "deep.apsi").write_text("let t = ()\nfor i in range(10000000):\n    t = (t,)\n"
                                        "let m = {:}\nm[t] = 1\nprint(t in m)\n")
    rc, out, err = cli(["deep.apsi"], tmp_path, timeout=300)
    assert (rc, out) == (0, "true\n"), (rc, err[-300:])


def test_stack_sizes_try_memory_first_and_end_at_the_safe_size():
    sizes = bigstack.stack_sizes()
    assert sizes[-1] == bigstack.STACK_BYTES and sizes == sorted(sizes, reverse=True)
    assert all(s % (1 << 20) == 0 for s in sizes)


LOOKUPS = ["m[t]", "m.pop(t)", "set([1]).remove(t)"]


def _missing_key(lookup):
    return f"let t = ()\nfor i in range(1000000):\n    t = (t,)\nlet m = {{(1): 2}}\nprint({lookup})\n"


@pytest.fixture(scope="module")
def key_runs(tmp_path_factory):
    return cli_cases(tmp_path_factory.mktemp("keys"), [_missing_key(k) for k in LOOKUPS], "key.apsi")


@pytest.mark.parametrize("lookup", LOOKUPS)
def test_a_missing_deep_key_is_named_briefly(key_runs, lookup):
    # the key is shown in the message, which is written on the main thread (a small stack)
    rc, out, err = outcome(key_runs, _missing_key(lookup))
    said = "is not in the set" if "set(" in lookup else "in the map"
    assert rc == 1 and "(a value nested too deeply to show)" in err and said in err, err[-300:]
