"""Gradient rules for issue 35's ops (arccosh, logaddexp, gammaln, polygamma, erfc, logit, convolve,
logspace, geomspace),
merged into vjps.RULES: the same table, the same conventions (written with `xp.*` only, so each rule
serves first order on NumPy and higher orders on the tape).

The other new functions (nanmedian, cov, interp, cummax, trapezoid, ...) are built from existing
differentiable ops and need no rule of their own.
"""

import math

_ERFC_C = -2.0 / math.sqrt(math.pi)


def _logaddexp(first):
    # d/da log(e^a + e^b) = sigmoid(a - b): finite where exp(a - ans) would be inf - inf (a = inf)
    def rule(xp, g, ans, a, b):
        d = a - b if first else b - a
        return xp.sum_to(g * xp.sigmoid(d), (a if first else b).shape)
    return rule


def _full_gradient(xp, g, n, m, mode):
    """The cotangent of numpy.convolve's 'full' output (length n + m - 1) from the one of `mode`'s."""
    if mode == "full":
        return g
    start = (min(n, m) - 1) // 2 if mode == "same" else min(n, m) - 1
    return xp.index_add(g, (slice(start, start + g.shape[0]),), (n + m - 1,))


def _convolve_rule(first):
    # out[k] = sum_i a[i] v[k - i] is linear in each argument; its adjoint for a is the correlation
    # of the full cotangent with v: convolve(g_full, v[::-1])[m - 1 : m - 1 + n] (and the same for v).
    def rule(xp, g, ans, a, v, mode="full"):
        n, m = a.shape[0], v.shape[0]
        gf = _full_gradient(xp, g, n, m, mode)
        other, size, skip = (v, n, m - 1) if first else (a, m, n - 1)
        return xp.getitem(xp.convolve(gf, xp.flip(other, 0)), (slice(skip, skip + size),))
    return rule


def _spacing(at_stop, scale):
    # logspace: out_i = base ** (s + (e - s) t_i), so d out_i / d s = ln(base) out_i (1 - t_i) and
    # d / d e = ln(base) out_i t_i; geomspace: out_i = s ** (1 - t_i) e ** t_i, the same with 1 / s, 1 / e
    def rule(xp, g, ans, s, e, num=50, endpoint=True, base=None):
        from .sequences import fractions

        t = fractions(num, endpoint)
        w = t if at_stop else 1.0 - t
        total = xp.sum(g * ans * w)
        if scale == "log":
            return total * math.log(base)
        return total / (e if at_stop else s)
    return rule


TOOLBOX_RULES = {
    "logspace": (_spacing(False, "log"), _spacing(True, "log")),
    "geomspace": (_spacing(False, "ratio"), _spacing(True, "ratio")),
    "arccosh": (lambda xp, g, ans, x: g / xp.sqrt(x * x - 1.0),),
    "logaddexp": (_logaddexp(True), _logaddexp(False)),
    "gammaln": (lambda xp, g, ans, x: g * xp.polygamma(0, x),),
    "polygamma": (lambda xp, g, ans, x, n=0: g * xp.polygamma(n + 1, x),),
    "erfc": (lambda xp, g, ans, x: g * _ERFC_C * xp.exp(-(x * x)),),
    "logit": (lambda xp, g, ans, x: g / (x * (1.0 - x)),),
    "convolve": (_convolve_rule(True), _convolve_rule(False)),
}
