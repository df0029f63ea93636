"""Stan's constraining transforms and their log-Jacobians, batched over chains.

For a parameter declared with bounds, Stan samples an unconstrained ``u`` and
adds ``log |dθ/du|`` to the log density (Stan Reference Manual, "Constraint
transforms"):

* ``<lower=0>``: ``θ = exp(u)``, ``log J = u``;
* ``<lower=a, upper=b>``: ``θ = a + (b - a) logit⁻¹(u)``,
  ``log J = log(b - a) + log logit⁻¹(u) + log(1 - logit⁻¹(u))``;
* ``ordered[K]``: ``θ₁ = u₁``, ``θ_k = θ_{k-1} + exp(u_k)``, ``log J = Σ_{k≥2} u_k``.

Each takes numpy or JAX arrays and returns the same kind (:mod:`ladder_mcmc.arrays`).
"""

from __future__ import annotations

import numpy as np

from ladder_mcmc.arrays import namespace


def inv_logit(u: np.ndarray) -> np.ndarray:
    """``1 / (1 + exp(-u))`` without overflow.

    Examples
    --------
    >>> inv_logit(np.array([0.0, 800.0, -800.0]))
    array([0.5, 1. , 0. ])
    """
    xp = namespace(u)
    u = xp.asarray(u, dtype=xp.float64)
    e = xp.exp(-xp.abs(u))
    return xp.where(u >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def log_inv_logit(u: np.ndarray) -> np.ndarray:
    """``log logit⁻¹(u) = -log(1 + exp(-u))``, stable for large ``|u|``.

    Examples
    --------
    >>> float(log_inv_logit(np.array(0.0)))  # log 1/2
    -0.6931471805599453
    """
    xp = namespace(u)
    u = xp.asarray(u, dtype=xp.float64)
    return -(xp.logaddexp(0.0, -u))


def log1m_inv_logit(u: np.ndarray) -> np.ndarray:
    """``log(1 - logit⁻¹(u)) = -log(1 + exp(u))``."""
    xp = namespace(u)
    u = xp.asarray(u, dtype=xp.float64)
    return -(xp.logaddexp(0.0, u))
