"""The polygamma functions of order n >= 1 through the Hurwitz zeta function, psi^(n)(q) =
(-1)^(n+1) n! zeta(n + 1, q), with zeta(s, q) = sum_{k >= 0} (q + k)^-s (DLMF 25.11.12).

Nothing here overflows on its way: each zeta is carried as q^-s times S = sum (1 + k/q)^-s (terms
<= 1), and n! q^-s is put together from mantissas and binary exponents (n <= 170) or in log space,
so the result is +-inf or 0 only where the true value is past the float range, and n = 10**9 costs
a few terms, not (10**9)! (issue 35's higher orders; tests/nn/test_special.py checks against mpmath).
"""

import math

import numpy as np

# B_2k / (2k)! for k = 1..9: the Euler-Maclaurin tail's coefficients (DLMF 25.11.7's terms)
_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510, 43867 / 798)
_COEF = tuple(b / math.factorial(2 * k) for k, b in enumerate(_BERNOULLI, 1))
# Euler-Maclaurin from y >= 1.5 (s + 18): its terms fall by ((s + 2k) / (2 pi y))^2 <= 0.011 each,
# so 9 terms end below 1e-18 of the tail whatever s is (a fixed cut-off at 20 diverges once s ~ y)
_REACH = 1.5
# a term e^-45 (3e-20) below the first no longer reaches a double's last digit: the sum stops there
_NEGLIGIBLE = 45.0
_FACTORIAL_MAX = 170        # 170! is the largest factorial a double holds


def sign(k):
    """(-1)^k for an int k of any size ((-1.0) ** k rounds a huge k to an even float)."""
    return -1.0 if k % 2 else 1.0


def scaled_zeta(s, q):
    """S with zeta(s, q) = q^-s * S, for s >= 2 (a float) and an array q > 0: direct terms until
    either they are negligible or q + N reaches the Euler-Maclaurin range, then its tail."""
    reach = _REACH * (s + 18.0)
    n_em = np.maximum(np.ceil(reach - q), 0.0)
    with np.errstate(over="ignore"):
        n_cut = np.ceil(q * math.expm1(min(_NEGLIGIBLE / (s - 1.0), 700.0)))
    tail = n_em <= n_cut
    count = np.where(tail, n_em, n_cut)
    total = np.zeros_like(q)
    for j in range(int(count.max(initial=0.0))):
        total += np.where(j < count, np.exp(-s * np.log1p(j / q)), 0.0)
    y = np.where(tail, q + count, reach)
    weight = np.where(tail, np.exp(-s * np.log1p(count / q)), 0.0)
    return total + weight * _em_tail(s, y)


def _em_tail(s, y):
    """y^s * sum_{k >= 0} (y + k)^-s by Euler-Maclaurin:
    y/(s-1) + 1/2 + sum_k B_2k/(2k)! (s)_{2k-1} / y^(2k-1)."""
    rising = s / y
    out = y / (s - 1.0) + 0.5 + _COEF[0] * rising
    for k, c in enumerate(_COEF[1:], 2):
        rising = rising * ((s + 2 * k - 3) / y) * ((s + 2 * k - 2) / y)
        out = out + c * rising
    return out


def factorial_over_power(n, q, scaled):
    """n! * q^-(n+1) * scaled, without overflow on the way (inf or 0 only if the result is)."""
    s = n + 1.0
    with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
        if n <= _FACTORIAL_MAX:
            fm, fe = math.frexp(float(math.factorial(n)))
            qm, qe = np.frexp(q)
            sm, se = np.frexp(scaled)
            mant = fm * sm * np.power(qm, -s)            # <= 2^171: finite
            return np.ldexp(mant, (fe + se - qe.astype(np.int64) * (n + 1)).astype(np.int64))
        log_mag = math.lgamma(s) - s * np.log(q) + np.log(np.abs(scaled))
        return np.sign(scaled) * np.exp(log_mag)


def positive(n, q):
    """psi^(n)(q) for q > 0 and n >= 1."""
    return sign(n + 1) * factorial_over_power(n, q, scaled_zeta(n + 1.0, q))


_PAIRS = 8      # for n > 100 pole pairs past the 8th are below 17^-100 of the first: not a digit


def negative(n, x):
    """psi^(n)(x) for negative non-integer x and large n (> 100, where the reflection's cot polynomial
    would overflow): the series sum (x + k)^-s split at the poles nearest x, x = -m + r with r in (0, 1),
    into pairs (r + j)^-s + (-1)^s (1 - r + j)^-s (exactly 0 at half-integers when they cancel) and
    zeta(s, r + m). Everything is scaled by mu^-s, mu = min(r, 1 - r), the largest term; where the
    pairs are not 0 they outweigh the zeta by more than 3^s, so adding the two cancels no digit."""
    s = n + 1.0
    m = -np.floor(x)
    r = x + m
    mu = np.minimum(r, 1.0 - r)
    parity = sign(n + 1)
    log_mu = np.log(mu)
    total = np.zeros_like(x)
    for j in range(_PAIRS):
        b = np.exp(-s * (np.log(r + j) - log_mu))
        a = np.exp(-s * (np.log(1.0 - r + j) - log_mu))
        total += np.where(j < m, b + parity * a, 0.0)
    q = r + m
    rest = scaled_zeta(s, q)
    # where the pairs are 0 (half-integers, even n) the rest alone, scaled apart: for huge n its share
    # of the pairs' scale underflows; elsewhere it joins them (both may be past the float range alone)
    together = total + np.exp(-s * (np.log(q) - log_mu)) * rest
    alone = total == 0
    return parity * np.where(alone, factorial_over_power(n, q, np.where(alone, rest, 1.0)),
                             factorial_over_power(n, mu, np.where(alone, 1.0, together)))
