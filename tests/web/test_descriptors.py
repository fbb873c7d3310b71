"""Out of file descriptors (a server under `ulimit -n 256` holding 600 idle connections): it backs off,
says so once, and goes on serving the connections it has. asyncio's own accept loop logged a Python
traceback per failed accept(), hundreds of thousands of lines and whole CPU-seconds a second."""

import os
import resource
import socket
import subprocess
import sys
import time

import pytest

from .conftest import free_port

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="/proc and RLIMIT_NOFILE")

PROGRAM = """use layers
use web
let net = mlp(4, 3, hidden=[16])
serve_model(net, net.init(seed=0), port={port}{options})
"""


def _cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    total = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    for task in os.listdir(f"/proc/{pid}/task"):
        for child in open(f"/proc/{pid}/task/{task}/children").read().split():
            total += _cpu_seconds(int(child))
    return total


def _ask(sock):
    sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
    data = b""
    while b"ready" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    return data


def _few_descriptors():
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))


@pytest.mark.parametrize("options", ["", ", workers=2"])
def test_out_of_descriptors_the_server_backs_off_logs_once_and_goes_on(tmp_path, web_env, options):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if min(hard, 4096) < 800:
        pytest.skip("this process may not open 600 connections")
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
    port = free_port()
    (tmp_path / "p.apsi").write_text(PROGRAM.format(port=port, options=options))
    err_path = tmp_path / "err"
    with open(err_path, "w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "apsi", f"--allow-net=127.0.0.1:{port}", "p.apsi"],
                                cwd=tmp_path, env=web_env, stderr=err, preexec_fn=_few_descriptors)
    socks = []
    try:
        deadline = time.monotonic() + 60
        while "serving" not in err_path.read_text():
            assert proc.poll() is None and time.monotonic() < deadline, err_path.read_text()
            time.sleep(0.1)
        first = socket.create_connection(("127.0.0.1", port))
        assert b" 200 " in _ask(first)
        for _ in range(600):
            s = socket.socket()
            s.setblocking(False)
            s.connect_ex(("127.0.0.1", port))
            socks.append(s)
        time.sleep(1)
        cpu = _cpu_seconds(proc.pid)
        time.sleep(1.5)
        used = _cpu_seconds(proc.pid) - cpu
        assert used < 0.3, used                     # (seconds of CPU in 1.5 s: it does not spin)
        assert b" 200 " in _ask(first)              # the connections it holds are served
        for s in socks[:400]:
            s.close()
        # (it waits in the listen queue until the server accepts again: _ask's 10 s are a hang guard)
        late = socket.create_connection(("127.0.0.1", port), timeout=10)
        late.settimeout(10)
        assert b" 200 " in _ask(late)               # and new ones again, once descriptors are free
    finally:
        for s in socks:
            s.close()
        proc.terminate()
        proc.wait(60)
    text = err_path.read_text()
    lines = [line for line in text.splitlines() if "cannot accept new connections" in line]
    assert 1 <= len(lines) <= 2 * (1 + options.count("workers")), text[-3000:]
    assert lines[0].startswith("serve_model: cannot accept new connections: Too many open files"), lines
    assert "Traceback" not in text and len(text.splitlines()) < 20, text[-3000:]
