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


class Terminal:
    """`apsi --allow-net=127.0.0.1:PORT p.apsi` run in a pseudo-terminal of its own, as typed there."""

    def __init__(self, folder, port, env):
        self.master, slave = os.openpty()
        command = [sys.executable, "-m", "apsi", f"--allow-net=127.0.0.1:{port}", "p.apsi"]
        self.proc = subprocess.Popen(command, cwd=folder, env=env, stdin=slave, stdout=slave, stderr=slave,
                                     preexec_fn=_own_terminal)
        os.close(slave)
        self.shown = b""

    def read_until(self, words, timeout=60):
        deadline = time.monotonic() + timeout
        while words not in self.shown and time.monotonic() < deadline:
            if select.select([self.master], [], [], 0.1)[0]:
                try:
                    self.shown += os.read(self.master, 65536)
                except OSError:
                    break
        return words in self.shown

    def ctrl_c(self):
        os.write(self.master, b"\x03")              # Ctrl-C, as typed

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        os.close(self.master)


def test_ctrl_c_typed_in_the_terminal_stops_the_server_with_exit_0(tmp_path, web_env):
    port = free_port()
    (tmp_path / "p.apsi").write_text(f"use web\nserve({{\"/hi\": fn(r) => \"hi\"}}, port={port})\n"
                                     "print(\"bye\")\n")
    with Terminal(tmp_path, port, web_env) as t:
        assert t.read_until(b"Ctrl-C stops"), t.shown
        assert httpx.get(f"http://127.0.0.1:{port}/hi").json() == "hi"
        t.ctrl_c()
        assert t.read_until(b"bye"), t.shown
        assert t.proc.wait(30) == 0, t.shown
        assert b"serve: stopped" in t.shown and b"Traceback" not in t.shown
