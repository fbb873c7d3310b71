"""fit's live bar in a notebook: one display (display_data with a display_id) updated in place
(update_display_data, a few times a second at most), ending as the fit's summary, next to the
per-epoch lines every front end sees; drawn by the kernel alone (escaped, never the program's HTML)."""

import time

import pytest

pytest.importorskip("ipykernel")
pytest.importorskip("jupyter_client")

from . import kernels  # noqa: E402

DATA = """use layers
use nn
let x = randn({n}, 2, seed=0)
let y = (x[:, 0] * x[:, 1] > 0) * 1
let net = mlp(2, 2, hidden=[8])
"""
FIT = ('let r = fit(net, net.init(seed=0), x, y, loss="cross_entropy", opt=adam(lr=0.05), '
       'epochs={epochs}, batch_size={batch})\nlen(r.history)')


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    kernels.install()
    km, kc = kernels.start("apsi", tmp_path_factory.mktemp("nb"))
    yield km, kc
    km.shutdown_kernel(now=True)


def bar_messages(outputs):
    """[(msg_type, content)] of the display/update messages that carry a display_id."""
    return [(t, c) for t, c in outputs if t in ("display_data", "update_display_data")
            and "display_id" in c.get("transient", {})]


def printed(outputs):
    return "".join(c["text"] for t, c in outputs if t == "stream" and c["name"] == "stdout")


def test_fit_shows_one_display_updated_in_place_and_ends_as_its_summary(kernel):
    km, kc = kernel
    kernels.run(kc, DATA.format(n=64))
    reply, outputs = kernels.run(kc, FIT.format(epochs=4, batch=16))
    assert reply["status"] == "ok" and outputs[-1][1]["data"]["text/plain"] == "4"
    bars = bar_messages(outputs)
    assert bars[0][0] == "display_data" and {t for t, _ in bars[1:]} == {"update_display_data"}
    ids = {c["transient"]["display_id"] for _, c in bars}
    assert len(ids) == 1 and len(bars) >= 1 + 4          # the start, each epoch's end, the summary
    assert "epoch 1/4" in bars[0][1]["data"]["text/plain"]
    final = bars[-1][1]["data"]["text/plain"]
    assert final.startswith("fit: 4/4 epochs in ") and "loss" in final and "→" in final
    assert "<pre" in bars[-1][1]["data"]["text/html"]
    # every front end sees the per-epoch lines, once each; the display never repeats them
    lines = printed(outputs)
    assert [lines.count(f"epoch {i}/4  loss") for i in range(1, 5)] == [1] * 4
    assert all("steps/s\n" not in c["data"]["text/plain"] for _, c in bars)
    # the display comes before the lines it sits above, and ends after the last of them
    order = [t for t, c in outputs if t != "execute_result"]
    assert order.index("display_data") < order.index("stream") < len(order) - 1 - order[::-1].index(
        "update_display_data")


def test_the_bar_is_updated_a_few_times_a_second_at_most(kernel):
    km, kc = kernel
    kernels.run(kc, DATA.format(n=3000))
    started = time.monotonic()
    reply, outputs = kernels.run(kc, FIT.format(epochs=2, batch=1))
    took = time.monotonic() - started
    bars = bar_messages(outputs)
    assert reply["status"] == "ok"
    # 6000 steps: without the throttle each would be a message; with it, at most 4 a second plus
    # the start, the epoch ends and the summary
    assert len(bars) <= 4 * took + 4, (len(bars), took)
    mid_epoch = [c for _, c in bars if "epoch 1/2" in c["data"]["text/plain"]]
    if took > 1.5:                                        # long enough to have moved within an epoch
        assert len(mid_epoch) >= 2


def test_an_interrupted_fit_returns_and_its_bar_ends_cleanly(kernel):
    km, kc = kernel
    kernels.run(kc, DATA.format(n=64))
    kc.execute('let long = fit(net, net.init(seed=1), x, y, loss="cross_entropy", epochs=100000, '
               'batch_size=1)')
    outputs, interrupted = [], False
    while True:                     # interrupt once the bar is up (fit is running), then read to the end
        message = kc.get_iopub_msg(timeout=30)
        kind = message["header"]["msg_type"]
        if kind == "status" and message["content"]["execution_state"] == "idle":
            break
        outputs.append((kind, message["content"]))
        if kind == "display_data" and not interrupted:
            time.sleep(1.0)
            km.interrupt_kernel()
            interrupted = True
    reply = kc.get_shell_msg(timeout=30)["content"]
    assert reply["status"] == "ok"
    bars = bar_messages(outputs)
    assert bars[0][0] == "display_data" and bars[-1][0] == "update_display_data"
    assert bars[-1][1]["data"]["text/plain"].startswith("fit: ") and "/100000 epochs in " in \
        bars[-1][1]["data"]["text/plain"]
    said = "".join(c["text"] for t, c in outputs if t == "stream")
    assert "fit: interrupted (Ctrl-C)" in said
    reply, outputs = kernels.run(kc, "long.stopped")
    assert outputs[-1][1]["data"]["text/plain"] == '"interrupted"'


def test_verbose_false_shows_no_bar(kernel):
    km, kc = kernel
    kernels.run(kc, DATA.format(n=32))
    reply, outputs = kernels.run(kc, FIT.format(epochs=2, batch=16).replace("batch_size=16",
                                                                          "batch_size=16, verbose=false"))
    assert reply["status"] == "ok" and bar_messages(outputs) == [] and printed(outputs) == ""



def test_the_bars_html_is_the_kernels_own_with_names_escaped(monkeypatch):
    """A progress message's fields are numbers and names: markup in a name is shown as text, and
    a field the kernel does not draw (here a ready-made text/html) never reaches the page."""
    hostile = {"type": "progress", "event": "update", "epoch": 2, "epochs": 3, "step": 1, "steps": 4,
               "loss": "<img src=x onerror=alert(1)>", "rate": 3.0, "left": 1.0, "done_epochs": 1,
               "last": {"<script>alert(1)</script>": 0.5, "[bold red]x[/]": 1.0},
               "data": {"text/html": "<script>alert(2)</script>"}}
    sent = kernels.execute_with(monkeypatch, [hostile, {"type": "done", "status": "ok"}], "fit(…)")
    (kind, shown), (end_kind, ended) = sent
    html = shown["data"]["text/html"]
    assert kind == "display_data" and "<script" not in html and "<img" not in html and "alert(2)" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "[bold red]x[/]" in shown["data"]["text/plain"]
    # the cell ended with the bar open (no "end" from fit): the kernel closes it itself
    assert end_kind == "update_display_data" and ended["transient"] == shown["transient"]
    assert ended["data"] == {"text/plain": "fit: ended with the cell\n"}


@pytest.mark.slow
def test_a_torch_fit_shows_the_bar_too(tmp_path):
    """torch reads the loss once per epoch (steps carry none): the bar still moves and ends."""
    pytest.importorskip("torch")
    kernels.install("apsi-torch", "--allow-python")           # backend="torch" needs it
    km, kc = kernels.start("apsi-torch", tmp_path)
    try:
        kernels.run(kc, DATA.format(n=64))
        reply, outputs = kernels.run(kc, FIT.format(epochs=3, batch=16).replace(
            "batch_size=16", 'batch_size=16, backend="torch"'), timeout=120)
    finally:
        km.shutdown_kernel(now=True)
    assert reply["status"] == "ok", reply
    bars = bar_messages(outputs)
    assert bars[0][0] == "display_data" and len({c["transient"]["display_id"] for _, c in bars}) == 1
    assert bars[-1][1]["data"]["text/plain"].startswith("fit: 3/3 epochs in ")
    assert [printed(outputs).count(f"epoch {i}/3  loss") for i in range(1, 4)] == [1] * 3
