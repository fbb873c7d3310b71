"""Real servers for the `use web` tests: an Apsi program run with `python -m apsi` in a subprocess on a
free port, spoken to over HTTP with httpx, stopped with a signal."""

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
ROOT = Path(__file__).resolve().parents[2]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def web_env(tmp_path_factory):
    """The environment for `python -m apsi`: this checkout first on PYTHONPATH. Where the installed
    distribution predates `use web` (an editable install made before its entry point existed), a
    one-line distribution declares it, as `pip install -e .` would."""
    from apsi_lang.installed import entry_points

    paths = [str(ROOT)]
    if "web" not in entry_points("apsi.modules"):
        shim = tmp_path_factory.mktemp("web-entry-point")
        info = shim / "apsi_web_dev-0.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text("Metadata-Version: 2.1\nName: apsi-web-dev\nVersion: 0.0\n")
        (info / "entry_points.txt").write_text("[apsi.modules]\nweb = apsi_layers.apsi_modules:web_module\n")
        paths.append(str(shim))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(paths + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env["OPENBLAS_NUM_THREADS"] = "1"
    return env


class Server:
    """A program that serves; `url`, `stop(sig)` -> (exit code, stdout, stderr)."""

    def __init__(self, folder, source, env, flags=None, port=None, ready=True):
        self.port = port or free_port()
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "p.apsi").write_text(source.replace("PORT", str(self.port)))
        flags = [f"--allow-net=127.0.0.1:{self.port}"] if flags is None else flags
        self.proc = subprocess.Popen([sys.executable, "-m", "apsi", *flags, "p.apsi"], cwd=folder, env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.url = f"http://127.0.0.1:{self.port}"
        self.err, self.out = [], []
        self.serving = threading.Event()
        threading.Thread(target=self._drain, args=(self.proc.stderr, self.err), daemon=True).start()
        self._out = threading.Thread(target=self._drain, args=(self.proc.stdout, self.out), daemon=True)
        self._out.start()
        if ready:
            self.wait_ready()

    def _drain(self, stream, lines):
        for line in stream:
            lines.append(line)
            if "serving" in line:
                self.serving.set()

    def wait_ready(self, timeout=60):
        deadline = time.monotonic() + timeout
        while not self.serving.wait(0.05):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.proc.kill()
                self.proc.wait()
                time.sleep(0.1)
                raise AssertionError(f"the server did not start: {''.join(self.err)}")

    def stop(self, sig=signal.SIGTERM, timeout=60):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise
        self._out.join(5)
        time.sleep(0.05)
        return code, "".join(self.out), "".join(self.err)

    def finish(self, timeout=60):
        """The exit code and output of a program that ends by itself (an error before serving)."""
        code = self.proc.wait(timeout)
        self._out.join(5)
        time.sleep(0.05)
        return code, "".join(self.out), "".join(self.err)


@pytest.fixture
def start(tmp_path, web_env):
    servers = []

    def make(source, **kw):
        server = Server(tmp_path / f"s{len(servers)}", source, web_env, **kw)
        servers.append(server)
        return server

    yield make
    for s in servers:
        if s.proc.poll() is None:
            s.proc.kill()
            s.proc.wait()


HANG_GUARD = 60         # seconds: only a hang waits this long


def post_in_two_halves(url, i, rest, results):
    """POST row [i, 1, 2, 3] to url/predict with half the body now and the rest once the event `rest` is
    set (so the request is inside the server meanwhile, however slowly a loaded machine runs the
    threads: a fixed pause let the first requests end before the last had begun); append (i, status,
    JSON answer) to results."""
    import httpx

    def trickle():
        yield f'{{"inputs": [[{i}, 1, '.encode()
        assert rest.wait(HANG_GUARD), "the test never released the rest of the body"
        yield b"2, 3]]}"

    r = httpx.post(f"{url}/predict", content=trickle(), timeout=HANG_GUARD)
    results.append((i, r.status_code, r.json()))


def held_request(url):
    """POST a request to url/predict whose body stops halfway until the returned event is set (the server
    is stopped under it: its end is not the test's business)."""
    import contextlib

    import httpx

    rest = threading.Event()

    def slow():
        yield b'{"inputs": [[1, '
        rest.wait(HANG_GUARD)
        yield b"2, 3, 4]]}"

    def post():
        with contextlib.suppress(httpx.HTTPError):
            httpx.post(f"{url}/predict", content=slow(), timeout=HANG_GUARD)

    threading.Thread(target=post, daemon=True).start()
    return rest


def in_flight(url):
    """The server's apsi_requests_in_flight (this scrape included)."""
    import httpx

    text = httpx.get(f"{url}/metrics").text
    return float(next(ln.split()[1] for ln in text.splitlines() if ln.startswith("apsi_requests_in_flight ")))


def wait_for(condition, what, timeout=HANG_GUARD):
    """Poll `condition` until it holds; fail saying `what` after `timeout` s (a hang guard, not a limit)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def refused(port):
    """Whether 127.0.0.1:port refuses a connection (the server has stopped accepting)."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    except ConnectionRefusedError:
        return True
    except TimeoutError:
        pass
    return False
