"""Layers register themselves where they are defined (layers/registry.py); the package's names, `use
layers`' exports and check_torch's coverage are read from the registry."""

import pytest

from apsi_layers import layers
from apsi_layers.layers import registry
from apsi_layers.layers.core import Dense
from apsi_layers.layers.exports import FUNCTIONS, layers_exports


@pytest.fixture
def extra_layer():
    @registry.register("twice_dense")
    def twice_dense(units, name=None):
        """dense(units) applied twice (a test layer)."""
        return layers.sequential(Dense(units), Dense(units), name=name)

    yield twice_dense
    del registry.LAYERS["twice_dense"]


def test_every_layer_the_package_binds_is_registered_and_exported():
    names = set(registry.constructors())
    assert {"dense", "dropout", "mlp", "dag", "transformer_lm", "gin_layer"} <= names
    exported = layers_exports()
    assert names | set(FUNCTIONS) <= set(exported)
    assert all(getattr(layers, n) is registry.LAYERS[n] for n in names)
    assert layers.dropout.__name__ == "dropout_layer" and layers.dropout.__doc__


def test_a_newly_registered_layer_is_exported_to_use_layers(extra_layer):
    exported = layers_exports()
    net = exported["twice_dense"](3)
    assert [type(child) for child in net.layers] == [Dense, Dense]


def test_two_layers_cannot_share_a_name(extra_layer):
    with pytest.raises(ValueError, match="two layers are registered as 'twice_dense'"):
        @registry.register("twice_dense")
        def other(units):
            return Dense(units)


def test_recording_names_the_layers_built_inside_others():
    built = registry.recording(lambda: layers.mlp(4, 2, hidden=[3], dropout=0.0))
    assert built == {"mlp"}                       # the zoo builds its parts from their classes
    built = registry.recording(lambda: layers.sequential(layers.dense(2), layers.dropout(0.5)))
    assert built == {"sequential", "dense", "dropout"}


def test_check_torch_has_a_case_for_every_registered_layer(extra_layer):
    """check_torch's cases must build every layer (a new one without a case is named here)."""
    from apsi_layers.backends.torch import check

    assert check.uncovered() == ["twice_dense"]

    @registry.parity_cases                  # the family file's cases: the layer is covered
    def cases(L, d):
        return [dict(name="twice_dense", model=L.twice_dense(3, name="t"), x=d.x(4, 2), input_shape=[2])]

    try:
        assert check.uncovered() == []
        assert [c.name for c in check.cases()][-1] == "twice_dense"
    finally:
        registry.CASES.remove(cases)
