"""lstm_layer and gru_layer: a whole sequence [B, T, F] in one op (torch's weights and formulas).

The input is x, or a list [x, h0] / [x, h0, c0] to start from a given state. ctx.mask [B, T]
(true = real step) makes padded steps carry the state over, so the last state is the last real one.
"""

import math

from apsi_lang.values import Record

from .base import Layer, fmt, positive_int
from .registry import parity_cases, register


class Recurrent(Layer):
    gates = 4
    several_inputs = True       # [x, h0] / [x, h0, c0]

    def __init__(self, units, return_sequences=False, return_state=False, inputs=None, name=None):
        super().__init__(name, inputs, return_sequences=return_sequences or None,
                         return_state=return_state or None)
        self.units = positive_int(self.kind, "units", units)
        self.return_sequences = bool(return_sequences)
        self.return_state = bool(return_state)

    def positional(self):
        return [self.units]

    def build(self, rng, input_shape):
        seq = input_shape[0] if isinstance(input_shape, list) else input_shape
        if not isinstance(seq, tuple) or len(seq) != 2 or seq[1] is None:
            one = isinstance(seq, tuple) and len(seq) == 1
            self.fail(f"expects per-sample sequences [steps, features], got {fmt(input_shape)}"
                      + (" (one feature per step still needs its axis: [steps, 1])" if one else ""))
        h, g = self.units, self.gates * self.units
        bound = 1.0 / math.sqrt(h)                        # torch.nn.LSTM/GRU's default
        params = Record(w_ih=rng.uniform((g, seq[1]), bound), w_hh=rng.uniform((g, h), bound),
                        b_ih=rng.uniform((g,), bound), b_hh=rng.uniform((g,), bound))
        out = (seq[0], h) if self.return_sequences else (h,)
        if self.return_state:
            out = [out] + [(h,)] * (self.gates // 2)      # [y, h_T] (GRU) or [y, h_T, c_T] (LSTM)
        return params, out

    def apply(self, params, x, ctx):
        ops = ctx.ops
        states = []
        if isinstance(x, list | tuple):
            x, *states = x
        if len(x.shape) != 3 or x.shape[2] != params.w_ih.shape[1]:
            self.fail(f"expects inputs [batch, steps, {params.w_ih.shape[1]} features], got shape "
                      f"{list(x.shape)}")
        zeros = ops.zeros((x.shape[0], self.units))
        need = self.gates // 2                            # LSTM: h and c; GRU: h
        if len(states) > need:
            self.fail(f"takes [x, h0{', c0' if need == 2 else ''}], got {len(states) + 1} inputs")
        states = list(states) + [zeros] * (need - len(states))
        mask = _sequence_mask(ctx.mask, x)
        out = self.run(ops, x, states, params, mask)
        y = out[0] if self.return_sequences else out[1]
        return [y, *out[1:]] if self.return_state else y


def _sequence_mask(mask, x):
    """ctx.mask when it is a [B, T] mask for this sequence (fit passes the batch's rows)."""
    if mask is None or tuple(mask.shape) != tuple(x.shape[:2]):
        return None
    return mask


class Lstm(Recurrent):
    kind = "lstm_layer"
    gates = 4

    def run(self, ops, x, states, p, mask):
        return ops.lstm(x, states[0], states[1], p.w_ih, p.w_hh, p.b_ih, p.b_hh, mask)


class Gru(Recurrent):
    kind = "gru_layer"
    gates = 3

    def run(self, ops, x, states, p, mask):
        return ops.gru(x, states[0], p.w_ih, p.w_hh, p.b_ih, p.b_hh, mask)


@register()
def lstm_layer(units, return_sequences=False, return_state=False, inputs=None, name=None):
    """LSTM over [B, T, F]: the last state [B, units], or every step [B, T, units] with
    return_sequences=true; return_state=true adds the final h and c."""
    return Lstm(units, return_sequences, return_state, inputs, name)


@register()
def gru_layer(units, return_sequences=False, return_state=False, inputs=None, name=None):
    """GRU over [B, T, F], options as lstm_layer (return_state adds the final h)."""
    return Gru(units, return_sequences, return_state, inputs, name)


@parity_cases
def _cases(L, d):
    seq_of = L.sequential
    return [
        dict(name="lstm", model=seq_of(L.lstm_layer(6, return_sequences=True, inputs=[5, 4]),
                                       L.lstm_layer(3)), x=d.seq),
        dict(name="lstm_mask", model=L.lstm_layer(6, return_state=True, inputs=[5, 4]), x=d.seq,
             mask=d.mask),
        dict(name="gru", model=seq_of(L.gru_layer(6, return_sequences=True, inputs=[5, 4]), L.gru_layer(3)),
             x=d.seq),
        dict(name="gru_mask", model=L.gru_layer(6, return_sequences=True, inputs=[5, 4]), x=d.seq,
             mask=d.mask),
    ]
