"""Issue 28: a model prints what it is. `print(mlp(2, 2, hidden=[8], activation="tanh", dropout=0.3))`
printed `mlp(2, 2, hidden=[8])` and `.options` was {}. Every constructor's text names every option that
differs from its default, and evaluating that text (as a user would paste it) rebuilds the same model:
the same text, the same options, the same parameter tree."""

import os
import subprocess
import sys

ZOO = [
    'mlp(2, 3, hidden=[8], activation="tanh", dropout=0.3, batch_norm=true)',
    'resnet_mlp(4, 2, width=16, blocks=2, dropout=0.1)',
    'cnn_classifier([1, 8, 8], 3, filters=[4], kernel=5, hidden=32, dropout=0.5)',
    'lstm_classifier(3, 2, units=8, layers=2, cell="gru", dropout=0.2)',
    'lstm_classifier(1, 2, vocab=30, embed=8)',
    'transformer_lm(20, d=16, heads=2, layers=1, context=12, dropout=0.1, hidden=24, '
    'positions="sinusoidal")',
    'gcn_classifier(5, 3, hidden=[8, 4], dropout=0.1, kind="gat")',
    'vae(6, 2, hidden=[5])',
]
LAYERS = [
    'dense(4, activation="relu", bias=false, inputs=3, name="d")',
    'embedding(10, 4, inputs=5)',
    'conv1d(4, 3, stride=2, padding="same", groups=2, bias=false, activation="relu")',
    'conv1d(4, 3, dilation=2)',
    'conv2d(4, 3, stride=2, padding="same", groups=2, activation="tanh", inputs=[2, 8, 8])',
    'max_pool1d(3, stride=1, padding="same")',
    'max_pool2d(3, stride=1)',
    'avg_pool1d(4)',
    'avg_pool2d(2, padding="same")',
    'global_avg_pool(axis=1)',
    'dropout(0.2)',
    'batch_norm(momentum=0.2, eps=0.001)',
    'layer_norm(eps=0.001, bias=false)',
    'rms_norm(eps=0.0001)',
    'activation("gelu")',
    'lstm_layer(8, return_sequences=true, return_state=true, inputs=[null_len, 3])',
    'gru_layer(8, return_sequences=true)',
    'attention(2, dim=8, causal=true, dropout=0.1, bias=false)',
    'transformer_block(2, hidden=16, dropout=0.1, causal=true, activation="relu")',
    'positions(12, kind="sinusoidal")',
    'gcn_layer(4, activation="relu")',
    'sage_layer(4, activation="relu")',
    'gat_layer(4, heads=2, concat=false, slope=0.1, activation="elu")',
    'gin_layer(4, hidden=8, eps=0.5, train_eps=true, activation="relu")',
    'sequential([dense(4, activation="relu"), dropout(0.1)], name="body", inputs=3)',
    'residual(dense(4), name="skip")',
    'parallel(dense(2), dense(3), merge="add", axis=1)',
    'merge("add", axis=1)',
    'flatten(name="flat")',
    'dag({x: [3], y: [2]}, {a: [dense(4), "x"], m: [merge(), ["a", "y"]]}, ["m", "a"], name="g")',
]


def run_apsi(code, cwd):
    env = {k: v for k, v in os.environ.items() if not k.startswith("APSI_")}
    p = subprocess.run([sys.executable, "-m", "apsi", "-e", code], cwd=cwd, capture_output=True, text=True,
                       env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    return p.stdout.splitlines()


def described(exprs, cwd, zoo):
    """For each expression: its text, its options, and (zoo models) its parameter names and shapes."""
    lines = ["use layers", "use nn"]            # (nn's relu prints as <fn relu>: a name it rebuilds)
    for e in exprs:
        lines += [f"let m = {e}", "print(m)", "print(m.options)"]
        if zoo:
            lines.append("print([[k, v.shape] for k, v in flatten(m.init(seed=0))])")
    return run_apsi("\n".join(lines).replace("null_len", "none"), cwd)


def test_every_zoo_model_prints_as_the_call_that_rebuilds_it(tmp_path):
    first = described(ZOO, tmp_path, zoo=True)
    texts = first[0::3]
    for expr, text in zip(ZOO, texts, strict=True):
        for option in (part.split("=")[0].strip() for part in expr.split(", ") if "=" in part):
            assert f"{option}=" in text, (expr, text)
    assert described(texts, tmp_path, zoo=True) == first


def test_the_issues_examples(tmp_path):
    out = run_apsi('use layers\nlet m = mlp(2, 2, hidden=[8], activation="tanh", dropout=0.3)\n'
                   'print(m)\nprint(m.options)\nprint(mlp(2, 2))\nprint(mlp(2, 2).options)\n'
                   'print(mlp(2, 2, hidden=[64, 64], dropout=0.0))', tmp_path)
    assert out == ['mlp(2, 2, hidden=[8], activation="tanh", dropout=0.3)',
                   '{hidden: [8], activation: "tanh", dropout: 0.3}', "mlp(2, 2)", "{}", "mlp(2, 2)"]


def test_every_layer_with_options_prints_as_the_call_that_rebuilds_it(tmp_path):
    first = described(LAYERS, tmp_path, zoo=False)
    texts = first[0::2]
    for expr, text in zip(LAYERS, texts, strict=True):
        for option in (part.split("=")[0].strip() for part in expr.split(", ") if "=" in part):
            assert f"{option}=" in text, (expr, text)
    assert described(texts, tmp_path, zoo=False) == first


def test_a_lambda_layer_names_its_output_shape(tmp_path):
    """(A function prints as <fn NAME>, which is no Apsi source: lambda_layer's text names it only.)"""
    out = run_apsi("use layers\nuse nn\nprint(lambda_layer(relu, output_shape=[3]))", tmp_path)
    assert out == ["lambda_layer(<fn relu>, output_shape=[3])"]


def test_summary_names_the_model_with_its_options(tmp_path):
    out = run_apsi('use layers\nsummary(cnn_classifier([1, 8, 8], 3, hidden=32, dropout=0.5))', tmp_path)
    assert out[0] == "cnn_classifier([1, 8, 8], 3, hidden=32, dropout=0.5)"
