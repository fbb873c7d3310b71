"""The Apsi kernelspec installed by the real `apsi kernel install` into a test folder, and kernels
started from it as Jupyter starts them."""

import os
import subprocess
import sys
import tempfile
from pathlib import Path

PREFIX = Path(tempfile.mkdtemp(prefix="apsi-test-jupyter-"))
os.environ["JUPYTER_PATH"] = str(PREFIX / "share" / "jupyter")     # where jupyter_client looks first


def install(name="apsi", *flags):
    """`apsi kernel install --prefix PREFIX --name NAME FLAGS…`; returns its output."""
    result = subprocess.run([sys.executable, "-m", "apsi", "kernel", "install", "--prefix", str(PREFIX),
                             "--name", name, *flags], capture_output=True, text=True, check=True)
    return result.stdout


def start(name, folder):
    from jupyter_client.manager import start_new_kernel

    return start_new_kernel(kernel_name=name, cwd=str(folder), startup_timeout=60)


def run(kc, code, timeout=60):
    """(reply content, [(msg_type, content)] of the outputs) of one cell."""
    outputs = []
    def hook(message):
        outputs.append((message["header"]["msg_type"], message["content"]))

    reply = kc.execute_interactive(code, timeout=timeout, output_hook=hook)
    return reply["content"], [(t, c) for t, c in outputs if t not in ("status", "execute_input")]


def started(kc, code, timeout=60):
    """Execute `code`, a cell whose first line prints "running", and return once that is shown: the
    cell runs in the worker, and an interrupt now is one for it (one sent before the kernel has taken
    the cell is dropped, as Jupyter drops an interrupt to an idle kernel)."""
    import time

    msg_id = kc.execute('print("running")\n' + code)
    deadline = time.monotonic() + timeout
    while True:
        message = kc.get_iopub_msg(timeout=max(0.1, deadline - time.monotonic()))
        if (message["parent_header"].get("msg_id") == msg_id and message["header"]["msg_type"] == "stream"
                and "running" in message["content"]["text"]):
            return


def worker_pid(km):
    """The kernel's worker process (its only child)."""
    pid = km.provisioner.process.pid
    children = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        children += (task / "children").read_text().split()
    return int(children[0])


def execute_with(monkeypatch, messages, code="1"):
    """The iopub messages [(msg_type, content)] the kernel sends for a cell whose worker answers
    with `messages` (no worker process, no ZeroMQ): what the kernel lets through, and how."""
    import asyncio

    from apsi_cli.kernel.kernel import ApsiKernel

    sent = []

    class Fake:
        def send(self, *a, **k):
            pass

    kernel = ApsiKernel.__new__(ApsiKernel)
    kernel.worker, kernel.notes, kernel.execution_count = Fake(), [], 1
    monkeypatch.setattr(ApsiKernel, "_answers", lambda self: iter(messages))
    monkeypatch.setattr(ApsiKernel, "send_response",
                        lambda self, socket, kind, content: sent.append((kind, content)))
    monkeypatch.setattr(ApsiKernel, "iopub_socket", None, raising=False)
    asyncio.run(kernel.do_execute(code, False))
    return sent
