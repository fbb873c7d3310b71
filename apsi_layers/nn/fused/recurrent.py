"""LSTM and GRU over a whole sequence, each one op (torch's formulas and gate order).

Forward: the input projection of every step in one GEMM, then a loop over time that keeps each
step's gates; backward: one BPTT loop that collects the gate gradients, then one GEMM each for the
input weights, the hidden weights and the input. Everything inside runs time-major ([T, B, ...]).
A mask [B, T] (true = a real step) carries state and output over the masked steps unchanged.

The LSTM op's single output packs [ys (T steps), c_T] along time as [B, T + 1, H]; h_T is ys's last
step, so the three results are slices of it.
"""

import numpy as np

from apsi_lang.errors import ApsiError

from ..autograd.tensor import plain_array
from .fastmath import sigmoid, tanh
from .record import fused, tensor


def _project(x, w_ih, b_ih, b_hh):
    """x [B, T, F] -> x @ w_ih.T + biases, time-major [T, B, G*H], in one GEMM."""
    batch, steps, feats = x.shape
    xt = np.ascontiguousarray(np.swapaxes(x, 0, 1)).reshape(steps * batch, feats)
    proj = xt @ w_ih.T
    for b in (b_ih, b_hh):
        if b is not None:
            proj += b
    return proj.reshape(steps, batch, -1), xt


def _gates(act, hidden):
    """The four gate blocks (i, f, g, o) of an LSTM step's [B, 4H] array, as views."""
    return act[:, :hidden], act[:, hidden:2 * hidden], act[:, 2 * hidden:3 * hidden], act[:, 3 * hidden:]


def _keep(mask, t):
    return None if mask is None else mask[:, t, None]


def _lstm_forward(x, h0, c0, w_ih, w_hh, b_ih, b_hh, training, mask):
    batch, steps, _ = x.shape
    hidden = w_hh.shape[1]
    proj, xt = _project(x, w_ih, b_ih, b_hh)
    h = np.zeros((batch, hidden)) if h0 is None else h0
    c = np.zeros((batch, hidden)) if c0 is None else c0
    out = np.empty((batch, steps + 1, hidden))
    if training:
        gates = np.empty((steps, batch, 4 * hidden))
        hs, cs, tcs = (np.empty((steps, batch, hidden)) for _ in range(3))
    w_hh_t = w_hh.T
    for t in range(steps):
        z = proj[t]
        z += h @ w_hh_t
        act = gates[t] if training else z
        sigmoid(z[:, :2 * hidden], out=act[:, :2 * hidden])
        tanh(z[:, 2 * hidden:3 * hidden], out=act[:, 2 * hidden:3 * hidden])
        sigmoid(z[:, 3 * hidden:], out=act[:, 3 * hidden:])
        i, f, g, o = _gates(act, hidden)
        c_new = f * c
        c_new += i * g
        tc = tanh(c_new)
        h_new = o * tc
        if training:
            hs[t], cs[t], tcs[t] = h, c, tc
        keep = _keep(mask, t)
        if keep is not None:
            c_new = np.where(keep, c_new, c)
            h_new = np.where(keep, h_new, h)
        h, c = h_new, c_new
        out[:, t] = h
    out[:, steps] = c
    saved = (xt, x.shape, w_ih, w_hh, gates, hs, cs, tcs, mask, b_ih is not None, b_hh is not None) \
        if training else None
    return out, saved


def _lstm_backward(gout, saved, needs):
    xt, xshape, w_ih, w_hh, gates, hs, cs, tcs, mask, has_bih, has_bhh = saved
    steps, batch, hidden = hs.shape
    dz = np.empty_like(gates)
    dh = np.zeros((batch, hidden))
    dc = np.array(gout[:, steps])
    for t in range(steps - 1, -1, -1):
        dh = dh + gout[:, t]
        keep = _keep(mask, t)
        if keep is not None:
            dh_carry, dc_carry = dh * ~keep, dc * ~keep
            dh, dc = dh * keep, dc * keep
        act = gates[t]
        i, f, g, o = _gates(act, hidden)
        tc = tcs[t]
        dct = dh * o
        dct *= 1.0 - tc * tc
        dct += dc
        d = dz[t]
        np.multiply(dct, g, out=d[:, :hidden])
        d[:, :hidden] *= i * (1.0 - i)
        np.multiply(dct, cs[t], out=d[:, hidden:2 * hidden])
        d[:, hidden:2 * hidden] *= f * (1.0 - f)
        np.multiply(dct, i, out=d[:, 2 * hidden:3 * hidden])
        d[:, 2 * hidden:3 * hidden] *= 1.0 - g * g
        np.multiply(dh, tc, out=d[:, 3 * hidden:])
        d[:, 3 * hidden:] *= o * (1.0 - o)
        dc = dct * f
        dh = d @ w_hh
        if keep is not None:
            dh += dh_carry
            dc += dc_carry
    return _weight_grads(dz, xt, xshape, hs, w_ih, needs, has_bih, has_bhh, (dh, dc))


def _weight_grads(dz, xt, xshape, hs, w_ih, needs, has_bih, has_bhh, state_grads):
    """The GEMMs after BPTT: dz [T, B, G*H] against the inputs and the previous hidden states."""
    steps, batch = dz.shape[:2]
    flat = dz.reshape(steps * batch, -1)
    nstate = len(state_grads)
    gx = None
    if needs[0]:
        gx = np.swapaxes((flat @ w_ih).reshape(steps, batch, -1), 0, 1)
    gw_ih = flat.T @ xt if needs[1 + nstate] else None
    gw_hh = flat.T @ hs.reshape(steps * batch, -1) if needs[2 + nstate] else None
    gb = flat.sum(axis=0) if (has_bih or has_bhh) else None
    gb_hh = (gb.copy() if has_bih else gb) if has_bhh else None      # two leaves, two arrays
    return (gx, *state_grads, gw_ih, gw_hh, gb if has_bih else None, gb_hh)


def _gru_forward(x, h0, w_ih, w_hh, b_ih, b_hh, training, mask):
    batch, steps, _ = x.shape
    hidden = w_hh.shape[1]
    proj, xt = _project(x, w_ih, b_ih, None)
    h = np.zeros((batch, hidden)) if h0 is None else h0
    out = np.empty((batch, steps, hidden))
    if training:
        rz_all, n_all = np.empty((steps, batch, 2 * hidden)), np.empty((steps, batch, hidden))
        ghn_all, hs = np.empty((steps, batch, hidden)), np.empty((steps, batch, hidden))
    w_hh_t = w_hh.T
    for t in range(steps):
        gh = h @ w_hh_t
        if b_hh is not None:
            gh += b_hh
        gi = proj[t]
        rz = gi[:, :2 * hidden]
        rz += gh[:, :2 * hidden]
        rz = sigmoid(rz, out=rz_all[t] if training else rz)
        r, z = rz[:, :hidden], rz[:, hidden:]
        ghn = gh[:, 2 * hidden:]
        n = gi[:, 2 * hidden:]
        n += r * ghn
        n = tanh(n, out=n_all[t] if training else n)
        h_new = h - n
        h_new *= z
        h_new += n
        if training:
            ghn_all[t], hs[t] = ghn, h
        keep = _keep(mask, t)
        if keep is not None:
            h_new = np.where(keep, h_new, h)
        h = h_new
        out[:, t] = h
    saved = (xt, x.shape, w_ih, w_hh, rz_all, n_all, ghn_all, hs, mask, b_ih is not None,
             b_hh is not None) if training else None
    return out, saved


def _gru_backward(gout, saved, needs):
    xt, xshape, w_ih, w_hh, rz_all, n_all, ghn_all, hs, mask, has_bih, has_bhh = saved
    steps, batch, hidden = hs.shape
    d_gi = np.empty((steps, batch, 3 * hidden))
    d_gh = np.empty((steps, batch, 3 * hidden))
    dh = np.zeros((batch, hidden))
    for t in range(steps - 1, -1, -1):
        dh = dh + gout[:, t]
        keep = _keep(mask, t)
        if keep is not None:
            dh_carry = dh * ~keep
            dh = dh * keep
        r, z = rz_all[t, :, :hidden], rz_all[t, :, hidden:]
        n = n_all[t]
        di, dg = d_gi[t], d_gh[t]
        dn = di[:, 2 * hidden:]
        np.multiply(dh, 1.0 - z, out=dn)
        dn *= 1.0 - n * n
        np.multiply(dn, ghn_all[t], out=di[:, :hidden])
        di[:, :hidden] *= r * (1.0 - r)
        np.subtract(hs[t], n, out=di[:, hidden:2 * hidden])
        di[:, hidden:2 * hidden] *= dh
        di[:, hidden:2 * hidden] *= z * (1.0 - z)
        dg[:, :2 * hidden] = di[:, :2 * hidden]
        np.multiply(dn, r, out=dg[:, 2 * hidden:])
        dh_prev = dh * z
        dh_prev += dg @ w_hh
        if keep is not None:
            dh_prev += dh_carry
        dh = dh_prev
    flat_i = d_gi.reshape(steps * batch, -1)
    flat_h = d_gh.reshape(steps * batch, -1)
    gx = np.swapaxes((flat_i @ w_ih).reshape(steps, batch, -1), 0, 1) if needs[0] else None
    gw_ih = flat_i.T @ xt if needs[2] else None
    gw_hh = flat_h.T @ hs.reshape(steps * batch, -1) if needs[3] else None
    gb_ih = flat_i.sum(axis=0) if has_bih and needs[4] else None
    gb_hh = flat_h.sum(axis=0) if has_bhh and needs[5] else None
    return gx, dh, gw_ih, gw_hh, gb_ih, gb_hh


_lstm = fused("lstm", _lstm_forward, _lstm_backward, 7)
_gru = fused("gru", _gru_forward, _gru_backward, 6)


def _check(fn, gates, x, states, w_ih, w_hh, b_ih, b_hh, mask):
    if x.ndim != 3:
        raise ApsiError(f"{fn}: input must be [batch, steps, features], got shape {x.shape}")
    batch, steps, feats = x.shape
    hidden = w_hh.shape[-1]
    want = {"w_ih": (w_ih, (gates * hidden, feats)), "w_hh": (w_hh, (gates * hidden, hidden)),
            "b_ih": (b_ih, (gates * hidden,)), "b_hh": (b_hh, (gates * hidden,))}
    want.update({name: (s, (batch, hidden)) for name, s in states.items()})
    for name, (t, shape) in want.items():
        if t is not None and t.shape != shape:
            raise ApsiError(f"{fn}: {name} has shape {t.shape}, expected {shape} for input {x.shape} "
                            f"and hidden size {hidden}")
    if steps == 0:
        raise ApsiError(f"{fn}: the sequence is empty (input {x.shape})")
    if mask is None:
        return None
    keep = plain_array(mask, fn, "mask", dtype=bool)
    if keep.shape != (batch, steps):
        raise ApsiError(f"{fn}: mask has shape {keep.shape}, expected [batch, steps] = {(batch, steps)}")
    return keep


def lstm(x, h0, c0, w_ih, w_hh, b_ih, b_hh, mask=None):
    """(ys [B, T, H], h_T, c_T) of an LSTM over x [B, T, F] from state (h0, c0)."""
    x, h0, c0, w_ih, w_hh, b_ih, b_hh = (tensor(t, "lstm", a) for t, a in zip(
        (x, h0, c0, w_ih, w_hh, b_ih, b_hh), ("x", "h0", "c0", "w_ih", "w_hh", "b_ih", "b_hh")))
    keep = _check("lstm", 4, x, {"h0": h0, "c0": c0}, w_ih, w_hh, b_ih, b_hh, mask)
    packed = _lstm(x, h0, c0, w_ih, w_hh, b_ih, b_hh, mask=keep)
    steps = x.shape[1]
    return packed[:, :steps], packed[:, steps - 1], packed[:, steps]


def gru(x, h0, w_ih, w_hh, b_ih, b_hh, mask=None):
    """(ys [B, T, H], h_T) of a GRU over x [B, T, F] from state h0."""
    x, h0, w_ih, w_hh, b_ih, b_hh = (tensor(t, "gru", a) for t, a in zip(
        (x, h0, w_ih, w_hh, b_ih, b_hh), ("x", "h0", "w_ih", "w_hh", "b_ih", "b_hh")))
    keep = _check("gru", 3, x, {"h0": h0}, w_ih, w_hh, b_ih, b_hh, mask)
    ys = _gru(x, h0, w_ih, w_hh, b_ih, b_hh, mask=keep)
    return ys, ys[:, -1]
