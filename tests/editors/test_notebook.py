"""A real notebook executed with nbclient on the Apsi kernel: a small model trained with fit's
progress shown, its loss plotted inline, a refused permission, and a long fit interrupted that keeps
what it had learned (as in the REPL)."""

import asyncio

import pytest

pytest.importorskip("ipykernel")
nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

from . import kernels  # noqa: E402

DATA = """use layers
use nn
let x = randn(64, 2, seed=0)
let y = (x[:, 0] * x[:, 1] > 0) * 1
let net = mlp(2, 2, hidden=[16])
let r = fit(net, net.init(seed=0), x, y, loss="cross_entropy", opt=adam(lr=0.05), epochs=4, batch_size=16)
len(r.history)"""
PLOT = """use plot
let f = figure(width=320, height=240)
f.line(r.history)
f"""
REFUSED = 'read_text("/etc/hostname")'
# on_epoch says when the fit is running, inside its loop: the interrupt is sent then (one sent before the
# kernel has taken the cell is dropped, as Jupyter drops an interrupt to an idle kernel, and the cell
# would then run for ever)
TRAINING = "training: interrupt now"
LONG_FIT = (f'fn going(epoch, logs):\n    if epoch == 1:\n        print("{TRAINING}")\n'
            'let long = fit(net, net.init(seed=1), x, y, loss="cross_entropy", epochs=100000, '
            'batch_size=1, verbose=false, on_epoch=going)')
AFTER = "long.stopped"


class InterruptsOnceTraining(nbclient.NotebookClient):
    """Interrupts the long fit as soon as its first epoch has said so, not after a fixed time."""

    interrupt = None

    def process_message(self, msg, cell, cell_index):
        out = super().process_message(msg, cell, cell_index)
        if (cell.source == LONG_FIT and self.interrupt is None and msg["msg_type"] == "stream"
                and TRAINING in msg["content"]["text"]):
            self.interrupt = asyncio.ensure_future(self.km.interrupt_kernel())
        return out


@pytest.mark.slow
def test_a_notebook_trains_plots_is_refused_and_is_interrupted(tmp_path):
    kernels.install()
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "apsi", "display_name": "Apsi", "language": "apsi"}
    nb.cells = [nbformat.v4.new_code_cell(c) for c in (DATA, PLOT, REFUSED, LONG_FIT, AFTER)]
    # 120 s per cell is a hang guard only (a fit interrupted stops within its step)
    client = InterruptsOnceTraining(nb, kernel_name="apsi", allow_errors=True, timeout=120,
                                    resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    assert client.interrupt is not None and client.interrupt.done()
    trained, plotted, refused, long_fit, after = nb.cells

    progress = "".join(o.get("text", "") for o in trained.outputs if o.output_type == "stream")
    assert [f"epoch {i}/4" in progress for i in range(1, 5)] == [True] * 4
    # nbclient applies the bar's update_display_data: the saved notebook holds its last state, the summary
    bars = [o for o in trained.outputs if o.output_type == "display_data"]
    assert len(bars) == 1 and bars[0]["data"]["text/plain"].startswith("fit: 4/4 epochs in ")
    assert trained.outputs[-1]["data"]["text/plain"] == "4"

    png = plotted.outputs[-1]["data"]["image/png"]
    import base64

    assert base64.b64decode(png).startswith(b"\x89PNG\r\n\x1a\n")

    assert refused.outputs[-1].output_type == "error"
    assert "apsi kernel install --allow-read" in "\n".join(refused.outputs[-1].traceback)

    said = "".join(o.get("text", "") for o in long_fit.outputs if o.output_type == "stream")
    assert TRAINING in said and "fit: interrupted (Ctrl-C)" in said
    assert after.outputs[-1]["data"]["text/plain"] == '"interrupted"'
