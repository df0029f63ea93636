"""``normal_quantile`` (AS 241) against SciPy's ``ndtri``, and what it spares a run.

* within ``2e-15`` of ``scipy.special.ndtri``, relative, from ``p = 2⁻¹⁰⁷⁴`` to
  ``1 − 2⁻⁵³`` (each of the three regions of the algorithm), and exact at the ends;
* a coefficient off in its eighth digit is caught;
* a first ``sample`` in a fresh process (stderr a pipe, the default checks) imports
  neither SciPy nor tqdm, both slow to import.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from scipy import special as scipy_special

from ladder_mcmc.diagnostics import normal_quantile as module
from ladder_mcmc.diagnostics.normal_quantile import normal_quantile

TOLERANCE = 2e-15


def _probabilities() -> np.ndarray:
    k = np.arange(1, 1075, dtype=np.float64)
    small = 2.0**-k
    return np.concatenate(
        [small[small > 0], 1.0 - 2.0 ** -np.arange(1.0, 54.0), np.linspace(0, 1, 20001)[1:-1]]
    )


def _worst(quantile=normal_quantile) -> float:
    p = _probabilities()
    p = p[p != 0.5]  # (Φ⁻¹(½) = 0 exactly: the ends' test)
    got, want = quantile(p), scipy_special.ndtri(p)
    return float(np.max(np.abs(got - want) / np.abs(want)))


def test_matches_scipy_over_every_region():
    p = _probabilities()
    r = np.sqrt(-np.log(np.minimum(p, 1 - p)))
    assert np.any(np.abs(p - 0.5) <= 0.425) and np.any(r > 5) and np.any((r <= 5) & (r > 1))
    assert _worst() <= TOLERANCE


def test_the_ends_and_outside():
    got = normal_quantile(np.array([0.0, 1.0, 0.5, -0.1, 1.1, np.nan]))
    assert got[:3].tolist() == [-np.inf, np.inf, 0.0]
    assert np.all(np.isnan(got[3:]))


@pytest.mark.parametrize("table", ["_CENTRAL", "_NEAR", "_FAR"])
def test_a_wrong_coefficient_is_caught(monkeypatch, table):
    numerators, denominators = getattr(module, table)
    broken = (numerators[:3] + (numerators[3] * (1 + 1e-8),) + numerators[4:], denominators)
    monkeypatch.setattr(module, table, broken)
    assert _worst() > TOLERANCE


def test_a_first_run_imports_neither_scipy_nor_tqdm():
    code = (
        "import sys, numpy as np\n"
        "from ladder_mcmc import sample, lahmc, FunctionTarget\n"
        "t = FunctionTarget(lambda x: 0.5 * (x * x).sum(1), lambda x: x, dim=2)\n"
        "sample(lahmc(t), np.zeros((4, 2)), 200, seed=0, warmup=100)\n"
        "print(sorted(m for m in ('scipy', 'tqdm') if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
