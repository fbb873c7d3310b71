"""nn's files sit in autograd/, numlib/, train/ and io/ (issue 31); a Python user's `nn.tree`,
`nn.linalg` or `from apsi_layers.nn import optim` still finds each module by its old name."""

import subprocess
import sys
from pathlib import Path

import pytest

from apsi_layers import nn

NN = Path(nn.__file__).parent


def test_every_module_moved_is_found_by_its_old_name_in_its_folder():
    assert len(nn._MOVED) == 47
    for name, folder in nn._MOVED.items():
        module = getattr(nn, name)
        assert Path(module.__file__) == NN / folder / f"{name}.py", name
    loose = [p.name for p in NN.glob("*.py") if p.name != "__init__.py"]
    assert not loose, f"{loose}: put nn's modules in autograd/, numlib/, train/ or io/ (README, Layout)"


def test_an_unknown_name_is_still_an_attribute_error():
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        nn.nope  # noqa: B018


def test_old_names_import_from_python_and_load_on_first_use():
    code = ("import sys; from apsi_layers import nn; "
            "assert 'apsi_layers.nn.numlib.toolbox' not in sys.modules; "
            "from apsi_layers.nn import toolbox, optim; "
            "print(toolbox.__name__, optim.adam is nn.adam)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["apsi_layers.nn.numlib.toolbox", "True"], out.stderr
