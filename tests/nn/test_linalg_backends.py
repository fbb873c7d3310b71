"""nn's linear algebra on torch tensors (the torch backend's versions, as an Apsi loss meets them
under fit(backend="torch")): the same values and gradients as on nn tensors, for every case of
test_linalg_torch.py."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from apsi_layers import nn  # noqa: E402
from apsi_layers.backends.torch import nn_dispatch  # noqa: E402
from apsi_layers.nn.numlib import linalg  # noqa: E402

from .test_linalg_torch import CASES, _tol, as_list, rel, weights  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def torch_installed():
    nn_dispatch.install()


def _loss(f, ws, wrap):
    def loss(*xs):
        return sum(nn.sum(o * wrap(w)) for o, w in zip(as_list(f(*xs)), ws, strict=True))
    return loss


@pytest.mark.parametrize("name,f,tf,xs,scale", CASES, ids=[c[0] for c in CASES])
def test_torch_tensors_give_nn_values_and_gradients(name, f, tf, xs, scale):
    tol = _tol(xs, scale)
    outs = as_list(f(*[nn.array(x) for x in xs]))
    ws = weights(outs)
    txs = [torch.tensor(x, requires_grad=True) for x in xs]
    touts = as_list(f(*txs))
    tws = ws
    vectors = {"svd_square": 0, "svd_tall": 0, "svd_wide_batched": 0, "eigh": 1, "eigh_batched": 1}
    if name in vectors:
        # each eigenvector's or singular pair's sign is LAPACK's choice: flip torch's to NumPy's (a
        # constant flip), and its weights with it, so the two scalar losses are the same function
        i = vectors[name]
        sign = np.sign(np.sum(outs[i].data * touts[i].detach().numpy(), axis=-2))
        flips = [sign[..., None, :], 1.0, sign[..., :, None]] if i == 0 else [1.0, sign[..., None, :]]
        touts = [t * torch.as_tensor(fl) for t, fl in zip(touts, flips, strict=True)]
        tws = [w * fl for w, fl in zip(ws, flips, strict=True)]
    for o, t in zip(outs, touts, strict=True):
        assert isinstance(t, torch.Tensor), name
        assert rel(t.detach().numpy(), o.data) < tol, name
    grads = nn.grad(_loss(f, ws, lambda w: w), argnums=tuple(range(len(xs))))(*[nn.array(x) for x in xs])
    grads = grads if len(xs) > 1 else (grads,)
    tgrads = torch.autograd.grad(_loss(f, tws, torch.as_tensor)(*txs), txs)
    for g, tg in zip(grads, tgrads, strict=True):
        assert rel(tg.numpy(), g.data) < tol, name


def test_every_linalg_function_has_a_torch_version():
    from apsi_layers.nn.autograd import foreign

    names = [n for n in dir(linalg)
             if not n.startswith("_") and getattr(getattr(linalg, n), "__wrapped__", None)]
    assert len(names) == 25
    assert [n for n in names + ["einsum"] if n not in foreign.IMPLS] == []


def test_einsum_checks_the_subscripts_on_torch_too():
    from apsi_lang.errors import ApsiError

    with pytest.raises(ApsiError, match="character '%'"):
        nn.einsum("i%,i", torch.ones(2), torch.ones(2))
