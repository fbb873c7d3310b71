"""Cost of units (`use units`): an op on quantities against the same op on plain values, and pint's
own cost for the same op. Prints a table; asserts nothing.

    PYTHONPATH=. python scripts/bench_units.py [--repeat 25]

Targets (issue 21): an elementwise op or reduction on 10⁴ elements with units <= 1.5x the plain
op; a scalar op at most 5 µs more than on plain numbers. Where units convert (m + cm, exp of m/km)
the plain side does the same conversion by hand (a + b * 0.01): a conversion is one more NumPy pass
whoever writes it.
"""

import argparse
import sys
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def best(stmts, ns, repeat, number):
    """The best time per run of each statement, measured in turns (plain, units, plain, ...): the
    machine's load drifts, and interleaving lets both sides see the same quiet moments."""
    timers = [timeit.Timer(s, globals=ns) for s in stmts]
    times = [float("inf")] * len(stmts)
    for _ in range(repeat):
        for i, t in enumerate(timers):
            times[i] = min(times[i], t.timeit(number) / number)
    return times


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=25)
    args = ap.parse_args()

    import numpy as np
    import pint

    from apsi_layers import nn
    from apsi_layers.units.exports import units_exports

    U = units_exports()
    u, q = U["u"], U["quantity"]
    reg = pint.UnitRegistry()
    a, b = nn.rand(10_000, seed=1) + 0.5, nn.rand(10_000, seed=2) + 0.5
    ns = dict(nn=nn, a=a, b=b, qa=a * u.m, qb=b * u.m, qc=b * u.cm, qs=a * u.s, x=1.5, y=2.5,
              sx=1.5 * u.m, sy=2.5 * u.m, sc=2.5 * u.cm, ss=2.5 * u.s, qd=a * u.m / u.km,
              pa=reg.Quantity(a.data, "m"), pb=reg.Quantity(b.data, "m"), px=reg.Quantity(1.5, "m"),
              py=reg.Quantity(2.5, "m"), ps=reg.Quantity(2.5, "s"), np=np, q=q)

    rows = [  # name, plain, with units, pint on ndarrays/floats (None: not comparable)
        ("10⁴ add, same unit", "a + b", "qa + qb", "pa + pb"),
        ("10⁴ add, m + cm", "a + b * 0.01", "qa + qc", "pa + reg_c"),
        ("10⁴ mul, m * s", "a * b", "qa * qs", "pa * ps"),
        ("10⁴ sqrt", "nn.sqrt(a)", "nn.sqrt(qa)", "np.sqrt(pa)"),
        ("10⁴ exp (m/km)", "nn.exp(a * 0.001)", "nn.exp(qd)", "np.exp(pd)"),
        ("10⁴ sum", "nn.sum(a)", "nn.sum(qa)", "pa.sum()"),
        ("10⁴ mean", "nn.mean(a)", "nn.mean(qa)", "pa.mean()"),
        ("10⁴ compare", "a < b", "qa < qb", "pa < pb"),
    ]
    ns["reg_c"] = reg.Quantity(b.data, "cm")
    ns["pd"] = reg.Quantity(a.data, "m/km")
    print(f"{'op':24s} {'plain µs':>9s} {'units µs':>9s} {'ratio':>6s} {'pint µs':>9s}  target")
    for name, plain, units, pint_stmt in rows:
        tp, tu = (t * 1e6 for t in best([plain, units], ns, args.repeat, 300))
        tq = best([pint_stmt], ns, 3, 200)[0] * 1e6
        print(f"{name:24s} {tp:9.2f} {tu:9.2f} {tu / tp:6.2f} {tq:9.2f}  <= 1.5x")

    scalars = [
        ("scalar add, same unit", "x + y", "sx + sy", "px + py"),
        ("scalar add, m + cm", "x + y", "sx + sc", "px + reg_sc"),
        ("scalar mul, m * s", "x * y", "sx * ss", "px * ps"),
        ("scalar div, m / s", "x / y", "sx / ss", "px / ps"),
        ("scalar pow 2", "x ** 2", "sx ** 2", "px ** 2"),
        ("scalar compare", "x < y", "sx < sc", "px < reg_sc"),
    ]
    ns["reg_sc"] = reg.Quantity(2.5, "cm")
    print(f"\n{'op':24s} {'plain µs':>9s} {'units µs':>9s} {'extra µs':>9s} {'pint µs':>9s}  target")
    for name, plain, units, pint_stmt in scalars:
        tp, tu = (t * 1e6 for t in best([plain, units], ns, args.repeat, 20_000))
        tq = best([pint_stmt], ns, 3, 2000)[0] * 1e6
        print(f"{name:24s} {tp:9.3f} {tu:9.3f} {tu - tp:9.3f} {tq:9.2f}  <= 5 µs extra")


if __name__ == "__main__":
    main()
