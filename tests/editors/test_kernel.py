"""The Jupyter kernel as Jupyter runs it: installed by `apsi kernel install`, started from its
kernelspec, driven over ZeroMQ by jupyter_kernel_test and jupyter_client."""

import json
import os
import time
import unittest

import pytest

pytest.importorskip("ipykernel")
jkt = pytest.importorskip("jupyter_kernel_test")

from . import kernels  # noqa: E402

kernels.install()


class ApsiKernelTests(jkt.KernelTests):
    kernel_name = "apsi"
    language_name = "apsi"
    file_extension = ".apsi"
    code_hello_world = 'print("hello, world")'
    code_stderr = 'eprint("to stderr")'
    completion_samples = [{"text": "pri", "matches": {"print"}}, {"text": "use pl", "matches": {"plot"}}]
    complete_code_samples = ["1", "print(1)", "fn f(x):\n    return x\n\n"]
    incomplete_code_samples = ["fn f(x):", "let xs = [1,", 'let s = """a']
    invalid_code_samples = ["let = 1", "print(1))"]
    complete_code_samples += ["(" * 95 + "1" + ")" * 95]       # as deep as Apsi's brackets go
    code_inspect_sample = "read_text"
    code_generate_error = 'error("boom")'
    code_execute_result = [{"code": "6 * 7", "result": "42"},
                           {"code": "{name: \"a\", n: [1, 2]}", "result": '{name: "a", n: [1, 2]}'},
                           {"code": "use plot\nlet fig = figure()\nfig.line([1, 4, 9])\nfig",
                            "mime": "image/png"}]
    code_display_data = [{"code": "use plot\nlet g = figure()\ng.hist([1, 2, 2, 3])\nshow(g)",
                          "mime": "image/png"}]

    @classmethod
    def setUpClass(cls):
        import tempfile

        cls.folder = tempfile.mkdtemp(prefix="apsi-notebook-")
        cls.km, cls.kc = kernels.start(cls.kernel_name, cls.folder)

    def test_language_info_names_the_pygments_lexer(self):
        info = self.kc.kernel_info(reply=True)["content"]["language_info"]
        assert info["pygments_lexer"] == "apsi" and info["name"] == "apsi"

    def test_cells_share_one_program(self):
        kernels.run(self.kc, "let base = 40\nfn more(x):\n    return x + base\n")
        reply, outputs = kernels.run(self.kc, "more(2)")
        assert reply["status"] == "ok"
        assert outputs[0][1]["data"]["text/plain"] == "42"

    def test_output_comes_in_the_order_it_was_written(self):
        code = 'print("a", end="")\nprint("b")\n1\neprint("c")\nprint("d", end="")'
        reply, outputs = kernels.run(self.kc, code)
        shown = [(t, c.get("name"), c.get("text") or c["data"]["text/plain"]) for t, c in outputs]
        assert shown == [("stream", "stdout", "ab\n"), ("execute_result", None, "1"),
                         ("stream", "stderr", "c\n"), ("stream", "stdout", "d")]

    def test_input_meets_the_end_of_input_and_the_kernel_goes_on(self):
        reply, outputs = kernels.run(self.kc, 'let answer = input("name? ")\nanswer == none')
        assert reply["status"] == "ok" and outputs[-1][1]["data"]["text/plain"] == "true"
        reply, outputs = kernels.run(self.kc, "2 + 2")
        assert outputs[-1][1]["data"]["text/plain"] == "4"

    def test_completion_offers_a_records_fields_and_a_modules_names(self):
        kernels.run(self.kc, "let cfg = {lr: 0.1, epochs: 3}\nuse nn as n")
        reply = self.kc.complete("cfg.", 4, reply=True)["content"]
        assert set(reply["matches"]) == {"lr", "epochs"} and reply["cursor_start"] == 4
        assert "zeros" in self.kc.complete("n.ze", 4, reply=True)["content"]["matches"]
        kernels.run(self.kc, "use layers")
        code = "fit(net, p, x, y, ep"
        assert "epochs=" in self.kc.complete(code, len(code), reply=True)["content"]["matches"]

    def test_a_failing_inspection_keeps_the_programs_state(self):
        kernels.run(self.kc, "let survivor = 5")
        # a field of a record whose text cannot be made (show of a value nested too deeply raises)
        kernels.run(self.kc, "let deep = []\nfor i in range(100000):\n    deep = [deep]\n"
                             "let holder = {v: deep}")
        self.kc.inspect("holder.v", 8, reply=True)
        reply, outputs = kernels.run(self.kc, "survivor")
        assert outputs[-1][1]["data"]["text/plain"] == "5"

    def test_inspect_shows_the_help_text(self):
        reply = self.kc.inspect("read_text", 3, reply=True)["content"]
        assert reply["found"] and reply["data"]["text/plain"].startswith("read_text(path")

    def test_errors_show_apsis_file_line_view_not_pythons(self):
        kernels.run(self.kc, "fn inner(x):\n    return x / 0\n")
        reply, outputs = kernels.run(self.kc, "inner(1)")
        text = "\n".join(reply["traceback"])
        assert reply["status"] == "error" and outputs[-1][0] == "error"
        assert "error: division by zero" in text and "in fn inner" in text and "<cell" in text
        assert 'File "' not in text and ".py" not in text

    def test_a_refused_permission_says_how_to_grant_it_to_this_kernel(self):
        reply, _ = kernels.run(self.kc, 'read_text("/etc/hostname")')
        text = "\n".join(reply["traceback"])
        assert "needs permission 'read'" in text
        assert "apsi kernel install --allow-read" in text and "apsi trust" in text

    def test_a_never_ending_cell_is_interrupted_and_the_state_kept(self):
        kernels.run(self.kc, "let kept = 7")
        kernels.started(self.kc, "while true:\n    pass\n")
        self.km.interrupt_kernel()
        reply = self.kc.get_shell_msg(timeout=60)["content"]
        assert reply["status"] == "error" and "interrupted" in "\n".join(reply["traceback"])
        reply, outputs = kernels.run(self.kc, "kept")
        assert outputs[0][1]["data"]["text/plain"] == "7"

    def test_a_flood_of_prints_arrives_whole_and_the_cell_ends(self):
        """Each print() was one iopub message: 20,000 of them (stdout and stderr in turns) went past
        ZeroMQ's high-water mark, messages were dropped, the cell's end too, and the cell never ended."""
        reply, outputs = kernels.run(self.kc, "for i in range(10000):\n    print(i)\n    eprint(-i)\n")
        assert reply["status"] == "ok"
        text = {name: "".join(c["text"] for t, c in outputs if t == "stream" and c["name"] == name)
                for name in ("stdout", "stderr")}
        assert text["stdout"] == "".join(f"{i}\n" for i in range(10000))
        assert text["stderr"] == "".join(f"{-i}\n" for i in range(10000))
        assert len(outputs) < 2000, len(outputs)

    def test_text_that_is_not_utf8_is_an_error_in_words(self):
        from pathlib import Path

        (Path(self.folder) / "latin1.apsi").write_bytes(b"let caf\xe9 = 1\n")
        reply, _ = kernels.run(self.kc, "use latin1")
        assert reply["status"] == "error" and reply["ename"] == "SyntaxError"
        assert reply["evalue"].startswith("<cell") and "is not UTF-8 text" in reply["evalue"]
        assert "(byte 0xe9 at position 7)" in reply["evalue"]
        reply, outputs = kernels.run(self.kc, 'print("a\\udcffb")')     # a lone surrogate printed
        assert reply["status"] == "ok" and outputs[0][1]["text"].startswith("a")

    def test_the_worker_runs_behind_the_kernel_wall(self):
        from apsi_cli.sandbox import confine

        if confine.describe()[0] != "on":
            raise unittest.SkipTest("no Landlock here: " + confine.describe()[1])
        status = open(f"/proc/{kernels.worker_pid(self.km)}/status").read()
        assert "Seccomp:\t2" in status


def test_install_writes_the_flags_into_the_kernelspec(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = kernels.install("apsi-flags", "--allow-python", "--allow-read=data", "--deny-net")
    spec = json.loads((kernels.PREFIX / "share/jupyter/kernels/apsi-flags/kernel.json").read_text())
    assert spec["argv"][1:5] == ["-m", "apsi_cli.kernel", "-f", "{connection_file}"]
    assert spec["argv"][5:] == ["--", "--allow-python", f"--allow-read={tmp_path.resolve() / 'data'}",
                                "--deny-net=*"]
    assert spec["language"] == "apsi" and "--allow-python" in out


def test_install_refuses_an_empty_scope():
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-m", "apsi", "kernel", "install", "--prefix",
                             str(kernels.PREFIX), "--allow-read="], capture_output=True, text=True)
    assert result.returncode == 2 and "empty scope" in result.stderr


@pytest.mark.slow
def test_an_untrusted_apsi_toml_grants_nothing_and_says_so(tmp_path):
    from tests.conftest import trust_toml

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "data.txt").write_text("granted")
    project = tmp_path / "notebooks"
    project.mkdir()
    toml = project / "apsi.toml"
    toml.write_text(f'[run]\nread = ["{outside}"]\n')
    km, kc = kernels.start("apsi", project)
    try:
        reply, outputs = kernels.run(kc, f'read_text("{outside / "data.txt"}")')
        said = "".join(c.get("text", "") for t, c in outputs if t == "stream")
        assert "is not trusted yet, so it grants nothing" in said and "apsi trust" in said
        assert reply["status"] == "error" and "needs permission 'read'" in "\n".join(reply["traceback"])
    finally:
        km.shutdown_kernel(now=True)
    trust_toml(toml)
    km, kc = kernels.start("apsi", project)
    try:
        reply, outputs = kernels.run(kc, f'read_text("{outside / "data.txt"}")')
        assert reply["status"] == "ok" and outputs[-1][1]["data"]["text/plain"] == '"granted"'
    finally:
        km.shutdown_kernel(now=True)


@pytest.mark.slow
def test_a_cell_stuck_in_one_long_c_call_is_ended_and_a_fresh_program_starts(tmp_path):
    """sum(range(10**10)) never lets the worker take the interrupt: the kernel ends it after 5 s."""
    km, kc = kernels.start("apsi", tmp_path)
    try:
        kernels.run(kc, "let kept = 1")
        kernels.started(kc, "sum(range(10000000000))")
        km.interrupt_kernel()
        reply = kc.get_shell_msg(timeout=60)["content"]
        said = "\n".join(reply["traceback"])
        assert reply["status"] == "error" and "did not stop within 5 s" in said
        assert "variables are lost" in said
        reply, _ = kernels.run(kc, "kept")
        assert "undefined name 'kept'" in reply["evalue"]
        reply, outputs = kernels.run(kc, "1 + 1")
        assert outputs[0][1]["data"]["text/plain"] == "2"
    finally:
        km.shutdown_kernel(now=True)


def test_a_malformed_apsi_toml_is_said_by_every_cell(tmp_path):
    (tmp_path / "apsi.toml").write_text("[run\n")
    km, kc = kernels.start("apsi", tmp_path)
    try:
        for _ in range(2):
            reply, _ = kernels.run(kc, "1")
            assert reply["status"] == "error" and "error in apsi.toml" in reply["evalue"]
    finally:
        km.shutdown_kernel(now=True)


def test_the_kernel_passes_on_only_text_and_png(monkeypatch):
    """What reaches the notebook's page from the worker is allow-listed (HTML would run script there)."""
    sent = kernels.execute_with(monkeypatch, [{"type": "display", "result": False, "data": {
        "text/plain": "x", "text/html": "<script>alert(1)</script>", "image/png": "iVBOR"}},
        {"type": "stream", "name": "stdin", "text": "no"}, {"type": "done", "status": "ok"}], "show(x)")
    assert sent == [("display_data", {"data": {"text/plain": "x", "image/png": "iVBOR"}, "metadata": {}})]


def _answer(worker, until="done", timeout=60):
    """The worker's messages up to its answer (`until`) to one request; the hang guard fails the test."""
    import queue

    messages = []
    while not messages or messages[-1]["type"] != until:
        try:
            messages.append(worker.messages.get(timeout=timeout))
        except queue.Empty:
            raise AssertionError(f"no answer from the worker within {timeout} s: {messages}") from None
        assert messages[-1] is not None, f"the worker ended: {messages}"
    return messages


def _wait_for(condition, timeout=60):
    """Poll until `condition()` holds (a hang guard, not a time limit)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "waited in vain (a hang guard)"
        time.sleep(0.01)


def _waiting_for_a_request(pid):
    """The worker is asleep with no signal pending (it has taken every signal sent to it)."""
    from pathlib import Path

    status = dict(line.split(":\t", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                  if ":\t" in line)
    return status["State"].startswith("S") and int(status["SigPnd"], 16) == int(status["ShdPnd"], 16) == 0


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc")
def test_a_ctrl_c_that_reaches_the_worker_before_it_reads_its_cell_stops_that_cell(tmp_path, monkeypatch):
    """The kernel passes Ctrl-C on only after it has written the cell. On a loaded machine the worker
    may run only after both: the interrupt then cut its reading of the cell short and the cell was lost,
    so the kernel waited, ended the worker after 5 s, and every variable was lost. Here the worker is
    held stopped (SIGSTOP) while the cell is written and Ctrl-C sent, as such a scheduler does. A Ctrl-C
    meant for a cell that has ended (none written since) stops nothing."""
    import signal

    from apsi_cli.kernel.kernel import WorkerProcess

    monkeypatch.chdir(tmp_path)
    worker = WorkerProcess([])
    try:
        _answer(worker, until="ready")
        _wait_for(lambda: _waiting_for_a_request(worker.process.pid))
        worker.interrupt()                                  # late, for no cell: nothing to stop
        _wait_for(lambda: _waiting_for_a_request(worker.process.pid))
        worker.send("execute", code="let kept = 7", count=1)
        assert _answer(worker)[-1]["status"] == "ok"
        _wait_for(lambda: _waiting_for_a_request(worker.process.pid))
        os.kill(worker.process.pid, signal.SIGSTOP)
        worker.send("execute", code="while true:\n    pass\n", count=2)
        worker.interrupt()
        os.kill(worker.process.pid, signal.SIGCONT)
        done = _answer(worker)[-1]
        assert done["status"] == "error" and done["traceback"] == ["apsi: interrupted (Ctrl-C)"], done
        worker.send("execute", code="kept", count=3)
        shown = _answer(worker)
        assert shown[-1]["status"] == "ok" and shown[0]["data"]["text/plain"] == "7", shown
    finally:
        worker.stop()

