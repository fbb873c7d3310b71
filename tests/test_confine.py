"""The second wall (sandbox/confine.py): with a hole in the language's checks, the kernel still refuses.

A hole is simulated without shipping one: a Python package made here offers an Apsi module through the
`apsi.modules` entry point, as any installed package may, and its function runs whatever Python the
test asks for inside the apsi process. Each attempt must fail with EACCES under the confinement,
succeed with the permission that grants it, and succeed with APSI_NO_CONFINE=1 (so the test can fail:
the hole is real). Confinement cannot be undone, so everything here runs in child processes.
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from apsi_cli.sandbox import confine, landlock, seccomp
from apsi_lang import permissions

ROOT = Path(__file__).parent.parent
ABI = landlock.abi()
needs_landlock = pytest.mark.skipif(ABI == 0, reason="this kernel has no Landlock (Linux >= 5.13)")

HOLE = '''
import errno, json, os, socket, subprocess

def attempt(what, arg=""):
    """Plain Python inside the apsi process: what a hole in the language's checks would allow."""
    try:
        if what == "read":
            with open(arg) as f:
                return "ok " + f.read(40)
        if what == "list":
            return "ok " + str(len(os.listdir(arg)))
        if what == "write":
            with open(arg, "w") as f:
                f.write("planted")
            return "ok"
        if what == "mkdir":
            os.mkdir(arg)
            return "ok"
        if what == "connect":
            socket.create_connection(("127.0.0.1", int(arg)), timeout=10).close()
            return "ok"
        if what == "unix":
            s = socket.socket(socket.AF_UNIX)
            s.connect(arg)
            s.close()
            return "ok"
        if what == "udp":
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.sendto(b"out", ("127.0.0.1", int(arg)))
            s.close()
            return "ok"
        if what == "signal":
            os.kill(os.getppid(), 0)
            return "ok"
        if what == "bind":
            s = socket.socket()
            s.bind(("127.0.0.1", int(arg or 0)))
            s.close()
            return "ok"
        if what == "exec":
            return "ok " + subprocess.run(arg.split(), capture_output=True, text=True).stdout.strip()
        if what == "env":
            return "ok " + str(os.environ.get(arg))
        if what == "memexec":
            # a program that never touches a path: the loader (readable, as every shared library is)
            # copied into memory and run from there
            import glob
            loader = sorted(glob.glob("/lib*/ld-linux*.so*") + glob.glob("/lib/*/ld-linux*.so*"))[0]
            with open(loader, "rb") as f:
                data = f.read()
            fd = os.memfd_create("x", 0)
            os.write(fd, data)
            out = subprocess.run([f"/proc/self/fd/{fd}", "--version"], pass_fds=(fd,), capture_output=True,
                                 text=True).stdout
            return "ok " + out.split(chr(10))[0][:6]
        if what == "tiocsti":
            import fcntl, termios
            for ch in arg.encode():
                fcntl.ioctl(0, termios.TIOCSTI, bytes([ch]))
            return "ok"
        if what == "cenv":
            return "ok " + subprocess.run(["env"], capture_output=True, text=True).stdout
    except OSError as e:
        return "denied " + errno.errorcode.get(e.errno, str(e.errno))
    return "unknown attempt " + what

def exports():
    return {"attempt": attempt}
'''


@pytest.fixture(scope="module")
def hole(tmp_path_factory):
    """A folder to put on PYTHONPATH: package `aphole` giving Apsi the module `hole`."""
    site = tmp_path_factory.mktemp("site")
    (site / "aphole").mkdir()
    (site / "aphole" / "__init__.py").write_text(HOLE)
    info = site / "aphole-0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: aphole\nVersion: 0\n")
    (info / "entry_points.txt").write_text("[apsi.modules]\nhole = aphole:exports\n")
    return site


@pytest.fixture
def place(tmp_path):
    """tmp/proj (the project), tmp/outside/secret.txt, and a TCP server on localhost."""
    proj, outside = tmp_path / "proj", tmp_path / "outside"
    proj.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("secret outside")
    (proj / "inside.txt").write_text("inside")
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    other = socket.socket()
    other.bind(("127.0.0.1", 0))
    other.listen(8)
    unix = socket.socket(socket.AF_UNIX)
    unix.bind(str(outside / "u.sock"))       # think of /var/run/docker.sock
    unix.listen(8)
    yield {"proj": proj, "outside": outside, "port": server.getsockname()[1],
           "other_port": other.getsockname()[1]}
    for s in (server, other, unix):
        s.close()


def apsi(args, cwd, site=None, env=None, stdin=None):
    full = {k: v for k, v in os.environ.items() if not k.startswith("APSI_")}
    full["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([str(site)] if site else []))
    full.update(env or {})
    p = subprocess.run([sys.executable, "-m", "apsi", *args], cwd=cwd, capture_output=True, text=True,
                       env=full, timeout=120, stdin=subprocess.DEVNULL if stdin is None else None,
                       input=stdin)
    return p.returncode, p.stdout, p.stderr


def through_hole(place, site, what, arg, *flags, env=None):
    code, out, err = apsi([*flags, "-e", f"use hole\nprint(attempt({what!r}, {str(arg)!r}))"],
                          place["proj"], site, env)
    assert code == 0, err
    return out.strip()


OFF = {confine.SWITCH: "1"}


# ---- each attempt: refused by the kernel, allowed by its permission, and real ------------------------

@needs_landlock
@pytest.mark.parametrize("what, arg, flag", [
    ("read", "{outside}/secret.txt", "--allow-read={outside}"),
    ("read", "/etc/passwd", "--allow-read=/etc/passwd"),
    ("read", "/proc/self/environ", "--allow-read"),
    ("list", "{outside}", "--allow-read={outside}"),
    ("list", "/tmp", "--allow-read=/tmp"),
    ("list", "{home}", "--allow-read"),
    ("write", "{outside}/planted.txt", "--allow-write={outside}"),
    ("write", "{outside}/secret.txt", "--allow-write={outside}/secret.txt"),
    ("mkdir", "{outside}/made", "--allow-write"),
    ("connect", "{port}", "--allow-net"),
    ("exec", "/bin/echo escaped", "--allow-run"),
    ("exec", "sh -c true", "--allow-run"),
    ("exec", "/bin/echo escaped", "--allow-run=echo"),
    ("memexec", "", "--allow-run"),
    ("connect", "{port}", "--allow-net=127.0.0.1"),
    ("connect", "{port}", "--allow-net=127.0.0.1:{port}"),
    ("udp", "{port}", "--allow-net"),
    ("unix", "{outside}/u.sock", "--allow-python"),
    ("signal", "", "--allow-python"),
])
def test_the_kernel_refuses_what_the_permissions_refuse(hole, place, what, arg, flag):
    values = {"outside": place["outside"], "port": place["port"], "home": Path.home()}
    if what == "signal" and ABI < 6 or what in ("connect", "bind") and ABI < 4:
        pytest.skip(f"this kernel's Landlock ABI {ABI} does not cover {what}")
    arg, flag = arg.format(**values), flag.format(**values)
    refusal = "denied EPERM" if what in ("signal", "memexec") else "denied EACCES"   # kill(2), seccomp
    assert through_hole(place, hole, what, arg) == refusal
    assert through_hole(place, hole, what, arg, flag).startswith("ok"), flag
    for made in ("planted.txt", "made"):
        shutil.rmtree(place["outside"] / made, ignore_errors=True)
        (place["outside"] / made).unlink(missing_ok=True)
    assert through_hole(place, hole, what, arg, env=OFF).startswith("ok")     # the hole is real


@needs_landlock
def test_a_port_granted_is_the_only_port(hole, place):
    if ABI < 4:
        pytest.skip("TCP rules need Landlock ABI 4")
    flag = f"--allow-net=localhost:{place['port']}"
    assert through_hole(place, hole, "connect", place["port"], flag) == "ok"
    assert through_hole(place, hole, "connect", place["other_port"], flag) == "denied EACCES"


@needs_landlock
def test_unix_sockets_stay_closed_even_with_net(hole, place):
    assert through_hole(place, hole, "unix", place["outside"] / "u.sock", "--allow-net") == "denied EACCES"


@needs_landlock
def test_python_programs_are_not_confined(hole, place):
    """`python` grants any Python code: a second wall would only break what it is for."""
    secret = str(place["outside"] / "secret.txt")
    assert through_hole(place, hole, "read", secret, "--allow-python") == "ok secret outside"


@needs_landlock
def test_the_project_stays_readable_and_writable(hole, place):
    assert through_hole(place, hole, "read", "inside.txt") == "ok inside"
    assert through_hole(place, hole, "write", "data.txt") == "ok"
    assert (place["proj"] / "data.txt").read_text() == "planted"
    assert through_hole(place, hole, "mkdir", "sub") == "ok"


@needs_landlock
def test_listening_needs_net_and_its_port(hole, place):
    """`use web` listens with `net` (as Deno's --allow-net): the whole permission, or host:port for that
    port only; without it the kernel refuses bind(2) too."""
    if ABI < 4:
        pytest.skip("TCP rules need Landlock ABI 4")
    free = _free_port()
    assert through_hole(place, hole, "bind", "") == "denied EACCES"
    assert through_hole(place, hole, "bind", "", "--allow-net") == "ok"
    assert through_hole(place, hole, "bind", free, f"--allow-net=127.0.0.1:{free}") == "ok"
    other = f"--allow-net=127.0.0.1:{place['port']}"
    assert through_hole(place, hole, "bind", free, other) == "denied EACCES"
    assert through_hole(place, hole, "bind", "", env=OFF) == "ok"


def _free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@needs_landlock
def test_commands_run_with_run_stay_inside_the_walls(hole, place):
    """With `run`, programs may be started, but they inherit the confinement."""
    secret = str(place["outside"] / "secret.txt")
    out = through_hole(place, hole, "exec", f"cat {secret}", "--allow-run")
    assert out == "ok"                    # cat ran, and printed nothing: it could not read the file
    out = through_hole(place, hole, "exec", f"cat {secret}", "--allow-run",
                       f"--allow-read={place['outside']}")
    assert out == "ok secret outside"


# ---- the environment --------------------------------------------------------------------------------

def test_environment_variables_are_removed_without_env(hole, place):
    env = {"APSI_TEST_TOKEN": "tok123", "LANG": "C.UTF-8", "OPENBLAS_NUM_THREADS": "1"}
    assert through_hole(place, hole, "env", "APSI_TEST_TOKEN", env=env) == "ok None"
    assert through_hole(place, hole, "env", "HOME", env=env) == "ok None"
    assert through_hole(place, hole, "env", "LANG", env=env) == "ok C.UTF-8"
    assert through_hole(place, hole, "env", "OPENBLAS_NUM_THREADS", env=env) == "ok 1"
    assert through_hole(place, hole, "env", "APSI_TEST_TOKEN", "--allow-env", env=env) == "ok tok123"
    assert through_hole(place, hole, "env", "APSI_TEST_TOKEN", "--allow-env=APSI_TEST_TOKEN",
                        env=env) == "ok tok123"
    assert through_hole(place, hole, "env", "HOME", "--allow-env=APSI_TEST_TOKEN", env=env) == "ok None"
    # a name denied inside a whole grant leaves the process's environment too (issue 15: children
    # started with `run` inherited it), so even a hole in the language's checks cannot read it
    assert through_hole(place, hole, "env", "APSI_TEST_TOKEN", "--allow-env", "--deny-env=APSI_TEST_TOKEN",
                        env=env) == "ok None"
    assert through_hole(place, hole, "env", "APSI_TEST_TOKEN", env={**env, **OFF}) == "ok tok123"
    # processes started with `run` get the cleaned environment too, PATH kept so commands are found
    out = through_hole(place, hole, "cenv", "", "--allow-run", env=env)
    assert "tok123" not in out and "PATH=" in out and "HOME=" not in out


def test_cleaning_reaches_the_c_environment_and_the_kernels_copy():
    """Without Landlock in the way: os.environ, posix.environ, getenv() in C and /proc/self/environ."""
    code = textwrap.dedent("""
        import ctypes, json, os, posix
        from apsi_cli.sandbox import confine
        confine.clean_environment(confine.Policy(read=(), write=()))
        libc = ctypes.CDLL(None)
        libc.getenv.restype = ctypes.c_char_p
        with open("/proc/self/environ", "rb") as f:
            block = f.read()
        token = b"APSI_TEST_TOKEN"
        print(json.dumps({"os": os.environ.get("APSI_TEST_TOKEN"), "posix": token in posix.environ,
                          "c": libc.getenv(token) is not None, "block": b"tok123" in block,
                          "lang": libc.getenv(b"LANG").decode()}))
    """)
    env = {**os.environ, "APSI_TEST_TOKEN": "tok123", "LANG": "C.UTF-8", "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == {"os": None, "posix": False, "c": False, "block": False, "lang": "C.UTF-8"}


# ---- programs still run: lazy imports of numpy and Apsi's modules after the confinement ------------

TRAIN = """\
use nn
let x = randn(64, 3, seed=1)
let y = x @ array([[1.0], [-2.0], [0.5]])
let params = {w: zeros(3, 1), b: zeros(1)}
fn loss(p):
    return mse(x @ p.w + p.b, y)
let opt = adam(lr=0.05)
let step = value_and_grad(loss)
for i in range(200):
    let l, g = step(params)
    params = opt.step(params, g)
save_params(params, "model.npz")
let back = load_params("model.npz")
print(loss(back), back.w)
"""


@pytest.mark.slow
@pytest.mark.parametrize("program", [TRAIN, 'print(sum([i * i for i in range(10)]), "plain")\n'])
def test_nn_training_runs_the_same_confined(place, program):
    (place["proj"] / "train.apsi").write_text(program)
    confined = apsi(["train.apsi"], place["proj"])
    unconfined = apsi(["train.apsi"], place["proj"], env=OFF)
    assert confined[0] == 0, confined[2]
    assert confined == unconfined


# ---- the switch, the doctor, and the rules of use ------------------------------------------------

def test_doctor_says_whether_programs_run_confined(monkeypatch):
    from apsi_cli.doctor import Report, _confinement

    r = Report()
    _confinement(r)
    [check] = r.checks
    assert check["key"] == "confine"
    if ABI:
        assert check["status"] == "ok" and f"Landlock ABI {ABI}" in check["detail"]
    else:
        assert check["status"] == "info" and "no Landlock" in check["detail"]
    monkeypatch.setenv(confine.SWITCH, "1")
    r = Report()
    _confinement(r)
    assert r.checks[0]["status"] == "warn" and confine.SWITCH in r.checks[0]["fix"]


def test_policy_follows_the_grants(tmp_path):
    proj, data = tmp_path / "proj", tmp_path / "data"
    proj.mkdir()
    data.mkdir()
    (data / "f.txt").write_text("x")
    g = permissions.Grants(frozenset(), (str(data),), (str(data / "f.txt"), str(data / "new.txt")), proj)
    p = confine.policy(g)
    import numpy

    assert any(str(Path(numpy.__file__).parent).startswith(r) for r in p.read)   # lazy imports
    assert str(data) in p.read and "/etc/passwd" not in p.read and "/tmp" not in p.read
    assert p.write[0] == str(proj) and p.write[-2:] == (str(data), str(data))  # files: their folder
    assert not (p.execute or p.net or p.env)
    g = permissions.Grants(frozenset({"read", "write", "run", "net", "env"}), (), (), proj)
    p = confine.policy(g)
    assert p.read is None and p.write is None and p.execute and p.net and p.env
    assert not confine.needed(permissions.Grants(frozenset({"python"}), (), (), proj))


def test_the_current_folder_is_not_read_as_part_of_python(tmp_path):
    """`python -m apsi` puts the current folder first on sys.path; it is not Python's installation."""
    code = "from apsi_cli.sandbox import confine; import sys; print(sys.path[0] in confine.python_paths())"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert p.stdout.strip() == "False", p.stderr


@needs_landlock
def test_confining_with_other_threads_running_is_refused():
    code = textwrap.dedent("""
        import threading, time
        from pathlib import Path
        from apsi_cli.sandbox import confine
        from apsi_lang import permissions
        threading.Thread(target=time.sleep, args=(2,), daemon=True).start()
        try:
            confine.apply(permissions.Grants(frozenset(), (), (), Path.cwd()))
        except RuntimeError as e:
            print("refused:", e)
    """)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert p.stdout.startswith("refused: confine.apply must run on the only thread"), p.stderr


@needs_landlock
def test_a_failing_landlock_call_stops_the_program_with_the_switch_named(place):
    (place["proj"] / "t.apsi").write_text('print("ran")\n')
    code = textwrap.dedent("""
        import errno, sys
        from apsi_cli import main
        from apsi_cli.sandbox import landlock
        def fail(self, *a):
            raise landlock.LandlockError(errno.EINVAL, "landlock_restrict_self: Invalid argument")
        landlock.Ruleset.restrict_self = fail
        sys.argv = ["apsi", "t.apsi"]
        main.main()
    """)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "-c", code], cwd=place["proj"], env=env, capture_output=True,
                       text=True, timeout=60)
    assert (p.returncode, p.stdout) == (1, "")
    assert "apsi could not confine this program (landlock_restrict_self" in p.stderr
    assert "APSI_NO_CONFINE=1" in p.stderr
    assert "Traceback" not in p.stderr


@needs_landlock
@pytest.mark.parametrize("form", [["run", "t.apsi"], ["t.apsi"], ["-e"], []])
def test_every_way_to_run_a_program_is_confined(hole, place, form):
    """`apsi run FILE`, `apsi FILE`, `apsi -e CODE` and the REPL."""
    secret = place["outside"] / "secret.txt"
    program = f'use hole\nprint(attempt("read", "{secret}"))\n'
    (place["proj"] / "t.apsi").write_text(program)
    args = form + [program] if form == ["-e"] else form
    env = {"APSI_HISTORY": str(place["proj"] / ".history")}
    code, out, err = apsi(args, place["proj"], hole, env, stdin=program if not form else None)
    assert code == 0 and "denied EACCES" in out, (out, err)


@needs_landlock
def test_the_repl_saves_its_history_outside_the_project_while_confined(place):
    """The history file is opened before the confinement; it could not be opened after."""
    import pty
    import select
    import time

    history = place["outside"] / "history"
    env = {k: v for k, v in os.environ.items() if not k.startswith("APSI_")}
    env.update(PYTHONPATH=str(ROOT), APSI_HISTORY=str(history), TERM="dumb")
    master, slave = pty.openpty()
    p = subprocess.Popen([sys.executable, "-m", "apsi"], stdin=slave, stdout=slave, stderr=slave,
                         cwd=place["proj"], env=env)
    os.close(slave)
    seen, deadline, step = b"", time.monotonic() + 120, "prompt"     # generous: CI machines are busy
    try:
        while p.poll() is None and time.monotonic() < deadline:
            if select.select([master], [], [], 0.2)[0]:
                try:
                    seen += os.read(master, 4096)
                except OSError:
                    break
            if step == "prompt" and b">>> " in seen:
                os.write(master, b'print(read_text("inside.txt"), 6 * 7)\n')
                step = "answer"
            elif step == "answer" and b">>> " in seen.partition(b"inside 42")[2]:
                os.write(master, b"\x04")          # Ctrl-D at the next prompt leaves
                step = "leave"
        p.wait(timeout=60)
    finally:
        os.close(master)
        if p.poll() is None:
            p.kill()
    assert b"inside 42" in seen, seen
    assert history.read_text() == 'print(read_text("inside.txt"), 6 * 7)\n'


# ---- the socket filter (apsi_cli/sandbox/seccomp.py) and Landlock's TCP rules, each on its own ------------

def _child(code, cwd=None):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, cwd=cwd, capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return p.stdout.split()


@pytest.mark.skipif(not seccomp.supported(), reason="the socket filter knows x86_64 and aarch64")
def test_the_socket_filter_alone():
    out = _child("""
        import ctypes, errno, socket
        from apsi_cli.sandbox import seccomp
        assert seccomp.install([seccomp.AF_INET])
        def attempt(family, kind=socket.SOCK_STREAM):
            try:
                socket.socket(family, kind).close()
                return "ok"
            except OSError as e:
                return errno.errorcode[e.errno]
        libc = ctypes.CDLL(None, use_errno=True)
        uring = libc.syscall(ctypes.c_long(425), ctypes.c_long(8), None) == -1 and ctypes.get_errno()
        args = [ctypes.c_long(a) for a in (0x40000000 | 41, 1, 1, 0)]     # socket(AF_UNIX) as x32
        x32 = libc.syscall(*args)
        a, b = socket.socketpair()
        import os
        try:
            os.memfd_create("x")
            memfd = "ok"
        except OSError as e:
            memfd = errno.errorcode[e.errno]
        print(attempt(socket.AF_INET), attempt(socket.AF_INET, socket.SOCK_DGRAM), attempt(socket.AF_UNIX),
              attempt(socket.AF_INET6), attempt(socket.AF_NETLINK, socket.SOCK_RAW), errno.errorcode[uring],
              x32 < 0, "socketpair-ok", memfd)
    """)
    assert out == ["ok", "ok", "EACCES", "EACCES", "EACCES", "ENOSYS", "True", "socketpair-ok", "EPERM"]


@needs_landlock
def test_landlock_alone_refuses_tcp_connect(place):
    if ABI < 4:
        pytest.skip("TCP rules need Landlock ABI 4")
    out = _child(f"""
        import errno, socket
        from apsi_cli.sandbox import confine
        confine.ruleset(confine.Policy(read=None, write=None, execute=True), {ABI}).restrict_self()
        try:
            socket.create_connection(("127.0.0.1", {place["port"]}), timeout=10)
            print("connected")
        except OSError as e:
            print(errno.errorcode[e.errno])
        print(open("/etc/hostname").read() != "")      # reads stay open: only TCP was handled
    """)
    assert out == ["EACCES", "True"]


def test_the_filter_program_jumps_where_it_says():
    """Two returns for a refused socket family and io_uring, one for everything else."""
    code = seccomp.program([seccomp.AF_INET], machine="x86_64")
    jumps = [(i, jt, jf) for i, (op, jt, jf, _) in enumerate(code) if op in (0x15, 0x35)]
    assert jumps and all(i + 1 + max(jt, jf) < len(code) for i, jt, jf in jumps)
    rets = [k for op, _, _, k in code if op == 0x06]
    assert rets == [0x7FFF0000, 0x7FFF0000, 0x00050000 | 1, 0x00050000 | 13, 0x7FFF0000, 0x00050000 | 38]


# ---- write grants under the confinement: what the program may write it can write, nothing more ----

@pytest.mark.parametrize("flags", [["--allow-write"], ["--allow-write={outside}"]])
def test_write_grants_write_atomically_and_keep_the_project_readable(place, flags):
    """`--allow-write` alone once left the project unreadable and atomic writes refused under the
    confinement (the temporary file was opened read-write, the project had no read rule)."""
    target = place["outside"] / "out.txt"
    flags = [f.format(outside=place["outside"]) for f in flags]
    program = (f'print(read_text("inside.txt"))\nwrite_text("{target}", "new")\n'
               f'append_text("{target}", "!")\nwrite_text("here.txt", "h")\n')
    for env in ({}, OFF):
        target.unlink(missing_ok=True)
        assert apsi([*flags, "-e", program], place["proj"], env=env)[:2] == (0, "inside\n")
        assert target.read_text() == "new!" and (place["proj"] / "here.txt").read_text() == "h"


@needs_landlock
def test_a_folder_granted_for_writing_is_not_readable(hole, place):
    flag = f"--allow-write={place['outside']}"
    secret = place["outside"] / "secret.txt"
    assert through_hole(place, hole, "read", secret, flag) == "denied EACCES"
    assert through_hole(place, hole, "write", place["outside"] / "planted.txt", flag) == "ok"
    both = [flag, f"--allow-read={place['outside']}"]
    assert through_hole(place, hole, "read", secret, *both).startswith("ok")
    assert through_hole(place, hole, "read", secret, flag, env=OFF) == "ok secret outside"


def test_the_file_system_root_is_not_a_project_for_the_kernel_either(tmp_path):
    g = permissions.Grants(frozenset(), (), (str(tmp_path),), Path("/"))
    p = confine.policy(g)
    assert "/" not in p.read and "/" not in p.write and str(tmp_path) in p.write


@pytest.mark.skipif(not seccomp.supported(), reason="the filter knows x86_64 and aarch64")
def test_nothing_is_typed_into_the_terminal(hole, place):
    """Standard input keeps its rights across the confinement; TIOCSTI on it would push characters into
    the terminal, which the user's shell reads as a command once apsi exits."""
    import fcntl
    import pty
    import termios

    try:
        legacy = Path("/proc/sys/dev/tty/legacy_tiocsti").read_text().strip() != "0"
    except OSError:
        legacy = True
    if not legacy and os.getuid() != 0:
        pytest.skip("this kernel refuses TIOCSTI to unprivileged processes already")

    def attempt(env):
        master, slave = pty.openpty()

        def controlling():          # the terminal becomes the child's own, as in a shell
            os.setsid()
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

        full = {k: v for k, v in os.environ.items() if not k.startswith("APSI_")}
        full.update(PYTHONPATH=os.pathsep.join([str(ROOT), str(hole)]), **env)
        code = 'use hole\nprint(attempt("tiocsti", "id\\n"))'
        p = subprocess.run([sys.executable, "-m", "apsi", "-e", code],
                           cwd=place["proj"], stdin=slave, capture_output=True, text=True, env=full,
                           timeout=120, preexec_fn=controlling)
        os.close(slave)
        os.set_blocking(master, False)
        try:
            typed = os.read(master, 100)
        except OSError:
            typed = b""
        os.close(master)
        return p.stdout.strip(), typed

    assert attempt({}) == ("denied EPERM", b"")
    out, typed = attempt(OFF)                      # the hole is real
    assert out == "ok" and b"id" in typed


@pytest.mark.skipif(not seccomp.supported(), reason="the filter knows x86_64 and aarch64")
@pytest.mark.parametrize("name", sorted(seccomp.DENIED["x86_64"]))
def test_system_v_ipc_keyrings_namespaces_and_mounts_are_refused(name):
    """Issue 15: each of these reached another process's SysV shared memory, message queues or
    semaphores, the user's keyring, or (as root) new namespaces. Each is EPERM under the filter, and
    the same call without the filter is not (so the test fails if the rule is removed)."""
    code = f"""
        import ctypes, errno
        from apsi_cli.sandbox import seccomp
        nr = seccomp.DENIED[seccomp._machine().lower()][{name!r}]
        libc = ctypes.CDLL(None, use_errno=True)
        def call():
            # harmless arguments: id/key/flags -1 (nothing is created, nothing waits)
            ctypes.set_errno(0)
            r = libc.syscall(ctypes.c_long(nr), ctypes.c_long(-1), ctypes.c_long(0), ctypes.c_long(0),
                             ctypes.c_long(0), ctypes.c_long(0))
            return "ok" if r != -1 else errno.errorcode.get(ctypes.get_errno(), "?")
        before = call()
        assert seccomp.install([])
        print(before, call())
    """
    before, after = _child(code)
    assert after == "EPERM", (name, before, after)
    assert before != "EPERM" or name in ("mount", "umount2", "pivot_root", "unshare", "setns"), before


def test_capabilities_are_dropped_from_the_bounding_and_ambient_sets():
    out = _child("""
        from apsi_cli.sandbox import confine
        confine.drop_capabilities()
        fields = dict(line.split(":\\t") for line in open("/proc/self/status").read().splitlines()
                      if line.startswith(("CapBnd", "CapAmb", "CapEff")))
        print(int(fields["CapBnd"], 16), int(fields["CapAmb"], 16), int(fields["CapEff"], 16) > 0)
    """)
    bounding, ambient, root_like = int(out[0]), int(out[1]), out[2] == "True"
    assert ambient == 0
    if root_like:                       # only a process with CAP_SETPCAP can empty the bounding set
        assert bounding == 0
