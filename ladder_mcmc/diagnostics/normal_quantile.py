"""The standard normal quantile ``Φ⁻¹(p)`` in numpy, for the rank-normalised diagnostics.

Wichura's algorithm AS 241 (``PPND16``, Applied Statistics 37, 1988): a ratio of degree-7
polynomials in ``p − ½`` for ``|p − ½| ≤ 0.425``, and beyond it in
``r = √(−log min(p, 1 − p))`` (one pair for ``r ≤ 5``, another past it), accurate to
about ``10⁻¹⁶`` relative over every ``p`` in ``(0, 1)``; ``±∞`` at 0 and 1, NaN outside.
Written here so that a run's diagnostics need not load :mod:`scipy.special`, which is slow
to import.
"""

from __future__ import annotations

import numpy as np

_CENTRAL = (
    (3.387132872796366608, 133.14166789178437745, 1971.5909503065514427,
     13731.693765509461125, 45921.953931549871457, 67265.770927008700853,
     33430.575583588128105, 2509.0809287301226727),
    (1.0, 42.313330701600911252, 687.1870074920579083, 5394.1960214247511077,
     21213.794301586595867, 39307.89580009271061, 28729.085735721942674,
     5226.4952788528545610),
)  # fmt: skip
_NEAR = (
    (1.42343711074968357734, 4.6303378461565452959, 5.7694972214606914055,
     3.64784832476320460504, 1.27045825245236838258, 0.24178072517745061177,
     0.0227238449892691845833, 7.7454501427834140764e-4),
    (1.0, 2.05319162663775882187, 1.6763848301838038494, 0.68976733498510000455,
     0.14810397642748007459, 0.0151986665636164571966, 5.475938084995344946e-4,
     1.05075007164441684324e-9),
)  # fmt: skip
_FAR = (
    (6.6579046435011037772, 5.4637849111641143699, 1.7848265399172913358,
     0.29656057182850489123, 0.026532189526576123093, 0.0012426609473880784386,
     2.71155556874348757815e-5, 2.01033439929228813265e-7),
    (1.0, 0.59983220655588793769, 0.13692988092273580531, 0.0148753612908506148525,
     7.868691311456132591e-4, 1.8463183175100546818e-5, 1.4215117583164458887e-7,
     2.04426310338993978564e-15),
)  # fmt: skip


def _ratio(coefficients: tuple, x: np.ndarray) -> np.ndarray:
    """``num(x) / den(x)``, each polynomial by Horner's rule (coefficients lowest first)."""
    out = []
    for c in coefficients:
        value = np.full_like(x, c[-1])
        for k in c[-2::-1]:
            value = value * x + k
        out.append(value)
    return out[0] / out[1]


def normal_quantile(p: np.ndarray) -> np.ndarray:
    """``Φ⁻¹(p)`` elementwise (float64): AS 241, see the module docstring. Each value is
    computed by its own region's ratio only."""
    p = np.asarray(p, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    d = p - 0.5
    with np.errstate(all="ignore"):
        central = np.abs(d) <= 0.425
        dc = d[central]
        out[central] = dc * _ratio(_CENTRAL, 0.180625 - dc * dc)
        tail = ~central & (p > 0.0) & (p < 1.0)
        r = np.sqrt(-np.log(np.minimum(p[tail], 1.0 - p[tail])))
        near = r <= 5.0
        value = np.empty_like(r)
        value[near] = _ratio(_NEAR, r[near] - 1.6)
        value[~near] = _ratio(_FAR, r[~near] - 5.0)
        out[tail] = np.where(d[tail] < 0, -value, value)
    out[p == 0.0] = -np.inf
    out[p == 1.0] = np.inf
    return out


__all__ = ["normal_quantile"]
