"""Ctrl-C typed in a terminal, as a user stops a server: the terminal sends SIGINT to the foreground
process group, the server answers what is in flight, and the program ends with exit 0."""

import fcntl
import os
import select
import subprocess
import sys
import termios
import time

import httpx
import pytest

from .conftest import free_port

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="a Linux pseudo-terminal")


def _own_terminal():
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def test_ctrl_c_typed_in_the_terminal_stops_the_server_with_exit_0(tmp_path, web_env):
    port = free_port()
    (tmp_path / "p.apsi").write_text(f"use web\nserve({{\"/hi\": fn(r) => \"hi\"}}, port={port})\n"
                                     "print(\"bye\")\n")
    master, slave = os.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "apsi", f"--allow-net=127.0.0.1:{port}", "p.apsi"],
                            cwd=tmp_path, env=web_env, stdin=slave, stdout=slave, stderr=slave,
                            preexec_fn=_own_terminal)
    os.close(slave)
    shown = b""

    def read_until(words, timeout=60):
        nonlocal shown
        deadline = time.monotonic() + timeout
        while words not in shown and time.monotonic() < deadline:
            if select.select([master], [], [], 0.1)[0]:
                try:
                    shown += os.read(master, 65536)
                except OSError:
                    break
        return words in shown

    try:
        assert read_until(b"Ctrl-C stops"), shown
        assert httpx.get(f"http://127.0.0.1:{port}/hi").json() == "hi"
        os.write(master, b"\x03")                   # Ctrl-C, as typed
        assert read_until(b"bye"), shown
        assert proc.wait(30) == 0, shown
        assert b"serve: stopped" in shown and b"Traceback" not in shown
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
