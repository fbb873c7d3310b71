"""A real notebook executed with nbclient on the Apsi kernel: a small model trained with fit's
progress shown, its loss plotted inline, a refused permission, and a long fit interrupted that keeps
what it had learned (as in the REPL)."""

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
LONG_FIT = ('let long = fit(net, net.init(seed=1), x, y, loss="cross_entropy", epochs=100000, '
            'batch_size=1, verbose=false)')
AFTER = "long.stopped"


@pytest.mark.slow
def test_a_notebook_trains_plots_is_refused_and_is_interrupted(tmp_path):
    kernels.install()
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "apsi", "display_name": "Apsi", "language": "apsi"}
    nb.cells = [nbformat.v4.new_code_cell(c) for c in (DATA, PLOT, REFUSED, LONG_FIT, AFTER)]
    client = nbclient.NotebookClient(nb, kernel_name="apsi", allow_errors=True, interrupt_on_timeout=True,
                                     # the long fit starts within milliseconds: 3 s is a wide margin
                                     timeout_func=lambda cell: 3 if cell.source == LONG_FIT else 120,
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
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
    assert "fit: interrupted (Ctrl-C)" in said
    assert after.outputs[-1]["data"]["text/plain"] == '"interrupted"'
