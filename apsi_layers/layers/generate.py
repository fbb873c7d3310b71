"""generate: continue a sequence of token ids with a language model (transformer_lm, or any model
mapping ids [B, T] to logits [B, T, vocab]), sampling one token at a time on the NumPy backend."""

import numpy as np

from apsi_lang.errors import ApsiError
from apsi_lang.values import show

from .base import Layer
from .context import Ctx
from .training.data_checks import Data, as_array, token_ids, wants_ids
from .training.model_checks import check_params


def generate(model, params, prompt, steps=100, temperature=1.0, seed=0):
    """The prompt followed by `steps` sampled ids (a list of ints). temperature=0 picks the most
    likely token each time; seed fixes the samples."""
    from apsi_layers.backends import registry

    ops = registry.find("numpy").opset()
    if not isinstance(model, Layer):
        raise ApsiError(f"generate: expects a language model such as transformer_lm(...), "
                        f"not {show(model, True)}")
    ids = [int(v) for v in as_array("generate", "prompt", prompt).reshape(-1)]
    if not ids:
        raise ApsiError("generate: the prompt is empty; give at least one token id")
    if not isinstance(steps, int) or steps < 0:
        raise ApsiError(f"generate: steps must be an int >= 0, got {show(steps, True)}")
    if not isinstance(temperature, int | float) or temperature < 0:
        raise ApsiError(f"generate: temperature must be a number >= 0, got {show(temperature, True)}")
    context = getattr(model, "context", None) or len(ids) + steps
    window = np.asarray([ids[-context:]])
    if wants_ids(model):
        token_ids("generate", model, np.asarray([ids]))
    check_params("generate", model, params, Data([window], None, 1))
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        x = ops.indices(np.asarray([ids[-context:]]))
        logits = ops.to_numpy(model.apply(params, x, Ctx(ops, training=False)))[0, -1]
        ids.append(_pick(logits, temperature, rng))
    return ids


def _pick(logits, temperature, rng):
    if temperature == 0:
        return int(np.argmax(logits))
    z = logits / temperature
    p = np.exp(z - z.max())
    p /= p.sum()
    return int(rng.choice(len(p), p=p))
