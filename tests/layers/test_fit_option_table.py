"""fit's options are one table (layers/training/options.py): the option checks, fit's help text, the
checkpoint's options that must not change and docs/layers.md's fit table are read from it or held
against it here."""

import re
from importlib import import_module
from pathlib import Path

import numpy as np
import pytest

from apsi_lang.errors import ApsiError
from apsi_layers.layers import dense, fit
from apsi_layers.layers.training import driver, options
from apsi_layers.layers.training.plan import FIT_OPTIONS, fit_plan

DOC = (Path(__file__).resolve().parents[2] / "docs" / "layers.md").read_text()


def _docs_table():
    """{option: default} from the table under docs/layers.md's '## fit'."""
    section = DOC.split("\n## fit\n", 1)[1].split("\n#", 1)[0]
    rows = {}
    for line in section.splitlines():
        m = re.match(r"^\| `(\w+)` \| (.*?) \| ", line)
        if m:
            rows[m.group(1)] = m.group(2)
    return rows


def test_the_docs_table_lists_every_option_with_the_tables_default():
    assert _docs_table() == {o.name: o.default for o in options.FIT}


def test_unknown_options_are_checked_against_the_table():
    assert FIT_OPTIONS == options.NAMES
    with pytest.raises(ApsiError, match=r"fit: unknown option 'epoch'; valid: loss, opt, epochs, .*csv_log "
                                        r"\(did you mean 'epochs'\?\)"):
        fit(dense(1, inputs=2), dense(1, inputs=2).init(seed=0), np.zeros((4, 2)), np.zeros((4, 1)),
            loss="mse", epoch=3)


def _resolve(path):
    """'option_checks.loss_arg' (in layers/training), 'context.graph_arg' (in layers) or
    'backends.registry.Backend.check_plan' (in apsi_layers) as the function it names."""
    for base in ("apsi_layers.layers.training", "apsi_layers.layers", "apsi_layers"):
        parts = path.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            try:
                value = import_module(f"{base}.{'.'.join(parts[:cut])}")
            except ModuleNotFoundError:
                continue
            for attr in parts[cut:]:
                value = getattr(value, attr)
            return value
    raise AssertionError(f"no function {path}")


@pytest.mark.parametrize("option", options.FIT, ids=lambda o: o.name)
def test_each_options_check_exists(option):
    assert callable(_resolve(option.check))


def test_the_checkpoint_signature_holds_exactly_the_resumed_options():
    """driver.signature is what a resume compares; its keys beyond the model's own are the table's."""
    x, y = np.zeros((8, 2)), np.zeros((8, 1))
    net = dense(1, inputs=2)
    plan = fit_plan(net, net.init(seed=0), x, y, {"loss": "mse", "val": [x, y]})
    keys = set(driver.signature(plan, "numpy"))
    assert keys - {"model", "names", "shapes", "n"} == set(options.resumed())
    assert options.resumed()["weights"] == ["sample_weight", "class_weight"]


def test_a_resume_with_a_resumed_option_changed_is_refused(tmp_path, monkeypatch):
    from apsi_lang import permissions

    monkeypatch.chdir(tmp_path)
    before = permissions.current()
    permissions.set_current(permissions.Grants(granted=frozenset(), project_root=tmp_path))
    try:
        x, y = np.random.default_rng(0).standard_normal((8, 2)), np.zeros((8, 1))
        net = dense(1, inputs=2)
        fit(net, net.init(seed=0), x, y, loss="mse", epochs=1, checkpoint="a.ckpt", verbose=False)
        with pytest.raises(ApsiError, match="seed"):
            fit(net, net.init(seed=0), x, y, loss="mse", epochs=2, seed=1, resume="a.ckpt", verbose=False)
        r = fit(net, net.init(seed=0), x, y, loss="mse", epochs=2, clip=1.0, resume="a.ckpt", verbose=False)
        assert r.epochs == 2                # clip is not a resumed option: free to change
    finally:
        permissions.set_current(before)


def test_fits_help_lists_every_option():
    lines = [line.split()[0] for line in fit.__doc__.splitlines()[2:] if line.strip()]
    assert lines == list(options.NAMES)
    assert "device" in fit.__doc__ and "[torch only]" in fit.__doc__


def test_the_torch_only_options_are_the_tables():
    assert options.only_on("torch") == ("device", "precision", "compile", "distributed")
