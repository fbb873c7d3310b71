"""grad, value_and_grad, jacobian, hessian: run the function on a tape, then walk it backwards.

First-order calls (nothing outside is being differentiated) take the fast path: the backward pass
runs the rules on raw ndarrays and accumulates gradients in place. When a tape is already active
(grad inside grad, hessian) the backward pass runs the same rules on tensors, recorded on that tape,
so the enclosing differentiation sees through it.
"""

import numpy as np

from apsi_lang.errors import ApsiError

from . import foreign, tree
from .graph import GRAPH
from .nonfinite import NonFiniteError
from .ops import add
from .tape import STATE, Tape
from .tensor import Tensor, as_tensor, describe
from .vjps import RULES, rule_name
from .xp import RAW

_IDENTITY = RULES["identity"]


def _to_leaf(tape, value, fn):
    t = as_tensor(value, fn)
    if t.tape is tape:
        # Already on this tape (an enclosing grad's variable): a fresh node keeps this call's
        # gradient separate while the enclosing one still flows through it.
        return tape.record(_IDENTITY, (t.node,), (t.data,), t.data, None, (t,))
    return tape.leaf(t.data)


def _argnums(argnums, nargs, fn):
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    for i in nums:
        if not isinstance(i, int) or not -nargs <= i < nargs:
            raise ApsiError(f"{fn}: argnums={argnums!r} but the function was called with {nargs} "
                            f"positional argument(s)")
    nums = tuple(i % nargs for i in nums)
    if len(set(nums)) != len(nums):
        raise ApsiError(f"{fn}: argnums={argnums!r} names the same argument twice; list each "
                        "argument once")
    return nums


class _Trace:
    """One run of f on a tape: which nodes are the variables and what f returned."""

    def __init__(self, f, argnums, args, kwargs, fn):
        if not callable(f):
            raise ApsiError(f"{fn}: expects a function, not {describe(f)}")
        self.fn = fn
        self.outer = STATE.tape
        self.tape = self.outer or Tape()
        self.nums = _argnums(argnums, len(args), fn)
        args = list(args)
        self.first = len(self.tape.entries)
        for i in self.nums:
            args[i] = tree.tree_map(lambda v: _to_leaf(self.tape, v, fn), args[i])
        self.variables = [args[i] for i in self.nums]
        self.stop = len(self.tape.entries)        # nodes first..stop-1 are the variables
        STATE.tape = self.tape
        try:
            self.out = f(*args, **kwargs)
        finally:
            # When nested, outer is this same tape: it keeps recording for the graph-mode backward.
            STATE.tape = self.outer

    @property
    def nested(self):
        return self.outer is not None

    def done(self):
        if self.outer is None:
            self.tape.entries.clear()             # free the saved activations now

    def backward(self, seed):
        """Gradients of the variables' leaves (a flat list) for the output cotangent `seed`."""
        out = self.out
        nleaves = self.stop - self.first
        if type(out) is not Tensor or out.tape is not self.tape or out.node < self.first:
            return [None] * nleaves
        if self.nested:
            grads = _backward_graph(self.tape.entries, out.node, seed, self.first, self.stop)
        else:
            grads = _backward_raw(self.tape.entries, out.node, seed, self.first, self.stop)
        return grads[:nleaves]

    def gradient_tree(self, flat, finish=True):
        """Flat leaf gradients rebuilt as one tree per differentiated argument."""
        it = iter(flat)
        out = []
        for var in self.variables:
            vals = [_finish(next(it), leaf, self.nested) if finish else next(it) for leaf in tree.leaves(var)]
            out.append(tree.unflatten_like(var, vals))
        return out


def _finish(g, leaf, nested):
    if g is None:
        return Tensor(np.zeros(leaf.data.shape))
    if nested:
        return g if type(g) is Tensor else as_tensor(g)
    g = np.asarray(g, dtype=np.float64)
    if not g.flags.writeable or g.shape != leaf.data.shape:  # a broadcast view: give an own array
        g = np.array(np.broadcast_to(g, leaf.data.shape))
    return Tensor(g)


def _backward_raw(entries, top, seed, first, stop):
    grads = [None] * (top + 1 - first)
    owned = [False] * len(grads)                    # owned[j]: grads[j] is ours to add into in place
    grads[top - first] = seed
    for i in range(top, stop - 1, -1):
        g = grads[i - first]
        if g is None:
            continue
        grads[i - first] = None                     # free it as soon as it has been passed on
        entry = entries[i]
        if entry is None:                           # a leaf of an inner grad: nothing flows past it
            continue
        rules, parents, datas, ans, params, _, _ = entry
        for k, p in enumerate(parents):
            if p < first:
                continue
            gk = rules[k](RAW, g, ans, *datas, **params) if params else rules[k](RAW, g, ans, *datas)
            j = p - first
            prev = grads[j]
            if prev is None:
                grads[j] = gk
            elif owned[j]:
                prev += gk
            else:
                total = prev + gk
                grads[j] = total
                owned[j] = type(total) is np.ndarray
    return grads


def _backward_graph(entries, top, seed, first, stop):
    grads = [None] * (top + 1 - first)
    grads[top - first] = seed
    for i in range(top, stop - 1, -1):
        g = grads[i - first]
        if g is None:
            continue
        grads[i - first] = None
        entry = entries[i]
        if entry is None:
            continue
        rules, parents, _, _, params, args, out = entry
        for k, p in enumerate(parents):
            if p < first:
                continue
            if getattr(rules[k], "first_order_only", False):
                raise ApsiError(f"op '{rule_name(rules)}' has no second derivative: hessian, jacobian "
                                "of grad and grad of grad cannot pass through it (first-order grad works)")
            gk = rules[k](GRAPH, g, out, *args, **params) if params else rules[k](GRAPH, g, out, *args)
            j = p - first
            grads[j] = gk if grads[j] is None else add(grads[j], gk)
    return grads


def _scalar_output(trace):
    out = trace.out
    if isinstance(out, int | float) and not isinstance(out, bool):
        return Tensor(np.asarray(float(out)))
    if type(out) is not Tensor:
        raise ApsiError(f"{trace.fn}: the function must return a number (a scalar loss), "
                        f"but it returned {describe(out)}")
    if out.data.size != 1:
        raise ApsiError(f"{trace.fn}: the function must return a single number (a scalar loss), but "
                        f"it returned a tensor of shape {out.shape}; reduce it with mean(...) or "
                        f"sum(...), or use jacobian for a vector-valued function")
    if not np.isfinite(out.data).all():
        raise NonFiniteError(f"{trace.fn}: the function returned {out.data.item()}; "
                        f"{_first_bad_op(trace) or 'check the inputs for NaN or inf'}")
    return out


def _first_bad_op(trace):
    """Name the first recorded op whose output holds NaN/inf while its inputs did not."""
    for entry in trace.tape.entries[trace.stop:]:
        if entry is None:
            continue
        rules, _, datas, ans, *_ = entry
        if not np.isfinite(ans).all() and all(_finite(d) for d in datas):
            return (f"the first non-finite value came from op '{rule_name(rules)}' "
                    f"(e.g. log or division of 0, overflow in exp; a learning rate too high)")
    return None


def _finite(d):
    return not isinstance(d, np.ndarray | float | int) or bool(np.isfinite(d).all())


def _first_bad_rule(trace, seed):
    """The forward pass was finite: replay the backward pass and name the first op whose gradient
    rule turned finite numbers into NaN/inf (e.g. sqrt at 0, whose slope is infinite)."""
    entries, first, stop = trace.tape.entries, trace.first, trace.stop
    grads = {trace.out.node: seed}
    for i in range(trace.out.node, stop - 1, -1):
        g = grads.pop(i, None)
        if g is None or entries[i] is None:
            continue
        rules, parents, datas, ans, params, _, _ = entries[i]
        for k, p in enumerate(parents):
            if p < first:
                continue
            gk = rules[k](RAW, g, ans, *datas, **(params or {}))
            if not _finite(gk) and _finite(g):
                return (f"the first NaN appeared in the backward pass, in the gradient of op "
                        f"'{rule_name(rules)}' (its slope is infinite or undefined at these inputs, "
                        "e.g. sqrt or log at 0, x ** 0.5 at 0): keep the inputs away from that point")
            grads[p] = gk if p not in grads else grads[p] + gk
    return "check the inputs for NaN or inf"


def _seed(out, nested):
    ones = np.ones(out.data.shape)
    return Tensor(ones) if nested else ones


def _check_grads(trace, flat, seed):
    if trace.nested:
        return
    for g in flat:
        if g is not None and np.isnan(np.sum(g)) and np.isnan(g).any():
            raise ApsiError(f"{trace.fn}: the gradient holds NaN although the loss is finite; "
                            f"{_first_bad_op(trace) or _first_bad_rule(trace, seed)}")


def _single(trace, grads):
    return grads[0] if len(trace.nums) == 1 else tuple(grads)


def value_and_grad(f, argnums=0, has_aux=False):
    """A function returning (f(args), gradient of f w.r.t. the argument(s) `argnums`).
    With has_aux=true, f returns (loss, extra) and the result is ((loss, extra), gradient)."""
    def value_and_grad_f(*args, **kwargs):
        if foreign.TYPES and foreign.handles("value_and_grad", leaves := _leaves(args)):   # use units
            return foreign.call_for(leaves, "value_and_grad", f, argnums, has_aux, args, kwargs)
        trace = _Trace(f, argnums, args, kwargs, "value_and_grad")
        try:
            aux = _split_aux(trace) if has_aux else None
            out = _scalar_output(trace)
            seed = _seed(out, trace.nested)
            flat = trace.backward(seed)
            _check_grads(trace, flat, seed)
            grads = trace.gradient_tree(flat)
            value = out if trace.nested else Tensor(out.data)
        finally:
            trace.done()
        return ((value, aux) if has_aux else value), _single(trace, grads)
    return value_and_grad_f


def _leaves(args):
    """Every leaf of the arguments: a record of quantities ({a: 2 m, b: 3 s}) is the units'
    to differentiate as much as a quantity is."""
    return [leaf for a in args for leaf in (tree.leaves(a) if not tree.is_leaf(a) else (a,))]


def _split_aux(trace):
    """With has_aux, f returns (loss, extra): keep the loss as the output, hand back the extra."""
    out = trace.out
    if not (isinstance(out, tuple | list) and len(out) == 2):
        raise ApsiError(f"{trace.fn}: with has_aux=true the function must return (loss, extra), "
                        f"not {describe(out)}")
    trace.out = out[0]
    return out[1]


def grad(f, argnums=0, has_aux=False):
    """A function returning the gradient of f (which must return a scalar) w.r.t. `argnums`.
    With has_aux=true, f returns (loss, extra) and the result is (gradient, extra)."""
    vg = value_and_grad(f, argnums, has_aux)

    def grad_f(*args, **kwargs):
        try:
            value, g = vg(*args, **kwargs)
            return (g, value[1]) if has_aux else g
        except ApsiError as e:
            # the same error, renamed: its traceback keeps the Apsi frames of f where it was raised
            if e.message.startswith("value_and_grad:"):
                e.message = "grad:" + e.message[len("value_and_grad:"):]
                e.args = (e.message,)
            raise
    return grad_f


def jacobian(f, argnums=0):
    """A function returning d f(x) / d x with shape f(x).shape + x.shape (per leaf for trees).
    When f returns a tree (a record or list of tensors, like grad does), the result is that tree with
    each leaf replaced by its jacobian: so hessian of a parameter tree is a tree of trees."""
    def jacobian_f(*args, **kwargs):
        if foreign.TYPES and foreign.handles("jacobian", leaves := _leaves(args)):     # use units
            return foreign.call_for(leaves, "jacobian", f, argnums, args, kwargs)
        trace = _Trace(f, argnums, args, kwargs, "jacobian")
        try:
            if not tree.is_leaf(trace.out):
                structure = trace.out
            else:
                return _single(trace, _jacobian_rows(trace))
        finally:
            trace.done()
        blocks = [jacobian(_leaf_of(f, j), argnums)(*args, **kwargs)
                  for j in range(len(tree.leaves(structure)))]
        return tree.unflatten_like(structure, blocks)
    return jacobian_f


def _jacobian_rows(trace):
    out = _tensor_output(trace)
    rows = [trace.backward(_onehot(out, i, trace.nested)) for i in range(out.data.size)]
    columns = list(zip(*rows, strict=True)) if rows else []
    leaves = [leaf for var in trace.variables for leaf in tree.leaves(var)]
    flat = [_stack_rows(col, leaf, out.shape, trace.nested) for col, leaf in zip(columns, leaves)]
    return trace.gradient_tree(flat, finish=False)


def _leaf_of(f, j):
    """f restricted to the j-th leaf of the tree it returns."""
    return lambda *args, **kwargs: tree.leaves(f(*args, **kwargs))[j]


def _tensor_output(trace):
    out = trace.out
    if type(out) is Tensor:
        return out
    if isinstance(out, int | float) and not isinstance(out, bool):
        return as_tensor(out, trace.fn)
    raise ApsiError(f"{trace.fn}: the function must return a tensor, a number or a tree of them, "
                    f"not {describe(out)}")


def _onehot(out, i, nested):
    e = np.zeros(out.data.size)
    e[i] = 1.0
    e = e.reshape(out.data.shape)
    return Tensor(e) if nested else e


def _stack_rows(col, leaf, out_shape, nested):
    shape = tuple(out_shape) + leaf.data.shape
    rows = [_finish(g, leaf, nested) for g in col]
    if nested:
        from .shape import reshape, stack
        return reshape(stack(rows), shape)
    return Tensor(np.stack([r.data for r in rows]).reshape(shape))


def hessian(f, argnums=0):
    """A function returning the second derivatives of scalar f: jacobian of grad. With several
    argnums, a tuple of tuples: h[i][j] is d²f / dx_i dx_j."""
    return jacobian(grad(f, argnums), argnums)
