"""Each zoo model: prints as the call that made it, its parameters match summary's count, predict
gives the documented shape, and one fit runs."""

import numpy as np
import pytest

from apsi_layers import layers as L
from apsi_layers import nn
from apsi_layers.layers.summary import rows

rng = np.random.default_rng(0)
EDGES = np.array([[0, 1, 2, 3], [1, 2, 3, 0]])

ZOO = [
    ("mlp", lambda: L.mlp(3, 2, hidden=[4, 4], dropout=0.1, batch_norm=True),
     rng.standard_normal((6, 3)), np.arange(6) % 2, (6, 2), {}),
    ("resnet_mlp", lambda: L.resnet_mlp(3, 2, width=8, blocks=2), rng.standard_normal((6, 3)),
     np.arange(6) % 2, (6, 2), {}),
    ("cnn_classifier", lambda: L.cnn_classifier([1, 6, 6], 3, filters=[2, 3], hidden=4),
     rng.standard_normal((4, 1, 6, 6)), np.arange(4) % 3, (4, 3), {}),
    ("lstm_classifier", lambda: L.lstm_classifier(3, 2, units=4, layers=2), rng.standard_normal((4, 5, 3)),
     np.arange(4) % 2, (4, 2), {}),
    ("lstm_classifier_ids_gru", lambda: L.lstm_classifier(0, 2, units=4, vocab=9, embed=3, cell="gru"),
     rng.integers(0, 9, (4, 5)), np.arange(4) % 2, (4, 2), {}),
    ("transformer_lm", lambda: L.transformer_lm(9, d=8, heads=2, layers=2, context=6, dropout=0.1),
     rng.integers(0, 9, (4, 6)), rng.integers(0, 9, (4, 6)), (4, 6, 9), {}),
    ("gcn_classifier", lambda: L.gcn_classifier(3, 2, hidden=[4]), rng.standard_normal((4, 3)),
     np.arange(4) % 2, (4, 2), {"graph": EDGES}),
    ("gat_classifier", lambda: L.gcn_classifier(3, 2, hidden=[4], kind="gat"), rng.standard_normal((4, 3)),
     np.arange(4) % 2, (4, 2), {"graph": EDGES}),
]


@pytest.mark.parametrize("case", ZOO, ids=[c[0] for c in ZOO])
def test_zoo_model(case):
    _, make, x, y, out_shape, opts = case
    model = make()
    assert repr(model).startswith(model.kind + "(")
    p = model.init(seed=0)
    table, total = rows(model, p)
    assert total == nn.param_count(p) and table[0][3] == f"{total:,}"
    assert L.predict(model, p, x, **opts).shape == out_shape
    r = L.fit(model, p, x, y.astype(float), loss="cross_entropy", epochs=2, batch_size=2, **opts)
    assert len(r.history) == 2 and np.isfinite(r.history).all()


def test_product_form_resnet_mlp():
    net = L.resnet_mlp(16, 4, width=128, blocks=4)
    p = net.init(seed=0)
    assert nn.param_count(p) == 136068
    assert [n for n, _ in nn.flatten(p)][:4] == ["dense.w", "dense.b", "block_0.layer_norm.gamma",
                                                 "block_0.layer_norm.beta"]


def test_generate_continues_the_prompt_reproducibly():
    lm = L.transformer_lm(7, d=8, heads=2, layers=1, context=4)
    p = lm.init(seed=0)
    a = L.generate(lm, p, [1, 2], steps=6, temperature=0.8, seed=3)
    assert a[:2] == [1, 2] and len(a) == 8 and all(0 <= t < 7 for t in a)
    assert a == L.generate(lm, p, [1, 2], steps=6, temperature=0.8, seed=3)
    greedy = L.generate(lm, p, [1, 2], steps=3, temperature=0)
    logits = L.predict(lm, p, [[1, 2]]).data[0, -1]
    assert greedy[2] == int(np.argmax(logits))


def test_summary_is_a_rich_table_on_a_terminal_and_text_otherwise(monkeypatch, capsys):
    import sys

    net = L.mlp(4, 2, hidden=[8])
    L.summary(net, net.init(seed=0))
    plain = capsys.readouterr().out
    assert plain.splitlines()[0] == "mlp(4, 2, hidden=[8])"        # what the model is, then its layers
    assert plain.splitlines()[1].split() == ["layer", "kind", "output", "shape", "params"]
    assert "┃" not in plain and "\x1b[" not in plain and plain.endswith("total parameters: 58\n")
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    monkeypatch.setenv("COLUMNS", "120")
    L.summary(net)
    table = capsys.readouterr().out
    assert "┏━" in table and "layer" in table and "│   dense_1 │ dense" in table
    assert table.endswith("total parameters: 58\n")


def test_one_hidden_width_may_be_an_int():
    assert repr(L.mlp(2, 2, hidden=4)) == "mlp(2, 2, hidden=[4])"
    assert nn.param_count(L.mlp(2, 2, hidden=4).init(seed=0)) == 2 * 4 + 4 + 4 * 2 + 2


def test_init_draws_pytorch_style_values_from_pcg64():
    """init(seed=0) is NumPy's PCG64 stream in build order: the same numbers on every machine."""
    p = L.mlp(2, 3, hidden=[4]).init(seed=0)
    g = np.random.default_rng(0)
    b1, b2 = 1 / np.sqrt(2), 1 / np.sqrt(4)
    want = [g.uniform(-b1, b1, (2, 4)), g.uniform(-b1, b1, 4), g.uniform(-b2, b2, (4, 3)),
            g.uniform(-b2, b2, 3)]
    got = [p.dense.w, p.dense.b, p.dense_1.w, p.dense_1.b]
    for a, b in zip(got, want, strict=True):
        assert a.data.dtype == np.float64 and np.array_equal(a.data, b)


def test_summary_checks_the_parameters_belong_to_the_model():
    from apsi_lang.errors import ApsiError

    net = L.mlp(2, 2, hidden=[4])
    with pytest.raises(ApsiError, match=r"summary: parameter dense.w has shape \[3, 4\] but the model needs "
                                        r"\[2, 4\]"):
        L.summary(net, L.mlp(3, 2, hidden=[4]).init(seed=0))
    with pytest.raises(ApsiError, match=r"summary: parameter dense.w is missing \(the model needs shape "
                                        r"\[2, 4\]\)"):
        L.summary(net, net.init(seed=0).dense)
