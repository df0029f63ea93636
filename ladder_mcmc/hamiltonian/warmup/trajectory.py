"""Trajectory length and momentum refresh from the chains' covariance (warm-up).

Both are read off the spectrum ``λ_1 ≥ … ≥ λ_d`` of the *whitened* covariance
``W = C⁻¹ Σ C⁻ᵀ``, ``C Cᵀ = M⁻¹`` the inverse mass: the covariance of the
coordinates ``z = C⁻¹ x`` in which the leapfrog has unit mass
(``docs/sampling.md``; ``docs/design.md`` §12). ``Σ`` is estimated from a warm-up
window's draws, pooled over chains and steps, so four chains suffice.

* **Leapfrog steps per rung** ``M``, in the manner of ChEES (Hoffman, Radul &
  Sountsov 2021): maximise the expected change in squared distance from the mean,
  per gradient, for a length jittered as the sampler jitters it. On a Gaussian with
  whitened variances ``λ_i``, a leapfrog of step ``ε`` rotates coordinate ``i`` by
  ``θ_i = arccos(1 − ε²/(2λ_i))`` per step, and ``n`` steps give
  ``E[(‖z_n‖² − ‖z_0‖²)²] / 4 = Σ_i λ_i² sin²(n θ_i)`` (each coordinate: two unit
  normals at correlation ``cos nθ_i`` differ in square by ``4 sin² nθ_i`` on
  average). :func:`chees_n_leapfrog` returns the ``M`` maximising
  ``Σ_i λ_i² E_n[sin²(n θ_i)] / M``, ``n`` uniform on the jittered lengths of centre
  ``M`` (:func:`jittered_lengths`). For a unit Gaussian it gives ``εM ≈ 0.79``
  with full jitter and ``εM ≈ 1.17`` without.
* **Momentum refresh** ``β``, in the manner of MEADS (Hoffman & Sountsov 2022):
  damping ``γ = 1/√λ_1`` (the slowest direction's frequency), applied over one
  rung's time ``εM``: ``β = 1 − exp(−2γεM)`` (:func:`meads_beta`).
"""

from __future__ import annotations

import contextlib
import math
from typing import Any

import numpy as np

from ladder_mcmc.arrays import namespace
from ladder_mcmc.hamiltonian.jittered_length import half_width

#: the most leapfrog steps per rung warm-up may choose
MAX_N_LEAPFROG = 1024


_BLAS: dict[str, Any] = {}


def _blas_on_this_thread() -> Any:
    """A context in which BLAS runs on the calling thread (with ``threadpoolctl``, if
    installed; else none): a window's small eigenproblem, right after the compiled loop,
    would otherwise wait for BLAS's threads to be scheduled beside XLA's."""
    if "controller" not in _BLAS:
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:
            _BLAS["controller"] = None
        else:
            _BLAS["controller"] = ThreadpoolController()
    controller = _BLAS["controller"]
    if controller is None:
        return contextlib.nullcontext()
    return controller.limit(limits=1, user_api="blas")


def whitened_eigenvalues(covariance: np.ndarray, inverse_mass: np.ndarray | None) -> np.ndarray:
    """Eigenvalues (descending) of the covariance in the coordinates of unit mass.

    Parameters
    ----------
    covariance : array (dim, dim)
        Covariance of the positions ``x``.
    inverse_mass : array (dim,) or (dim, dim), or None
        The metric's ``M⁻¹`` (diagonal, dense, or the identity).
    """
    with _blas_on_this_thread():
        cov = np.atleast_2d(np.asarray(covariance, dtype=float))
        if inverse_mass is None:
            w = cov
        else:
            inv = np.asarray(inverse_mass, dtype=float)
            if inv.ndim == 1:
                s = 1.0 / np.sqrt(inv)
                w = cov * s[:, None] * s[None, :]
            else:
                c = np.linalg.cholesky(inv)
                half = np.linalg.solve(c, cov)
                w = np.linalg.solve(c, half.T).T
        w = (w + w.T) / 2
        eig = np.linalg.eigvalsh(w)[::-1]
    return np.clip(eig, 0.0, None)


def jittered_lengths(n_leapfrog: int, jitter: float) -> tuple[int, int]:
    """The lengths ``LengthJitter(M, j)`` draws uniformly: ``(M − w, M + w)``, ``w = ⌊j(M−1)⌋``
    (:func:`~ladder_mcmc.hamiltonian.jittered_length.half_width`; ``jitter = 0``: ``M``)."""
    w = half_width(n_leapfrog, jitter)
    return n_leapfrog - w, n_leapfrog + w


def chees_n_leapfrog(
    eigenvalues: np.ndarray,
    step_size: Any,
    jitter: float = 1.0,
    max_n_leapfrog: int = MAX_N_LEAPFROG,
) -> Any:
    """The centre ``M`` that maximises the Gaussian ChEES criterion per gradient.

    ``Σ_i λ_i² mean_{n} sin²(n θ_i) / M`` with ``θ_i = arccos(1 − ε²/(2λ_i))`` and
    ``n`` uniform on :func:`jittered_lengths` ``(M, jitter)`` (``jitter = 0``: ``n = M``).
    Directions where the leapfrog is unstable (``ε ≥ 2√λ_i``) count zero, as do
    eigenvalues ``≤ 0``; ``1`` if none counts. On numpy values an ``int``; on JAX values
    (inside the compiled warm-up) an int64 scalar.
    """
    xp = namespace(eigenvalues, step_size)
    lam = _representatives(xp.asarray(eigenvalues, dtype=xp.float64))
    positive = lam > 0
    safe = xp.where(positive, lam, 1.0)
    c = 1.0 - step_size**2 / (2.0 * safe)
    stable = positive & (c > -1.0)
    theta = xp.arccos(xp.clip(c, -1.0, 1.0))
    weight = xp.where(stable, safe**2, 0.0)
    n = np.arange(2 * max_n_leapfrog + 1, dtype=float)
    # the criterion of every single length n, then its running sum over n
    per_length = (xp.sin(n[:, None] * theta[None, :]) ** 2) @ weight
    total = xp.concatenate([xp.zeros(1), xp.cumsum(per_length)])
    centres = np.arange(1, max_n_leapfrog + 1)
    w = half_width(centres, jitter)
    lo, hi = centres - w, centres + w
    mean = (total[hi + 1] - total[lo]) / (hi - lo + 1)
    best = centres[0] + xp.argmax(mean / centres)
    valid = xp.any(weight > 0) & (step_size > 0)
    if xp is np:
        return int(best) if bool(valid) else 1
    return xp.where(valid, best, 1).astype(xp.int64)


def meads_beta(largest_eigenvalue: float, step_size: float, n_leapfrog: int) -> float:
    """``β = 1 − exp(−2 εM / √λ_1)``: MEADS's damping ``γ = 1/√λ_1`` over one rung.

    At least ``10⁻³`` (a refresh that never refreshes would freeze the momentum's law),
    at most 1.
    """
    if not largest_eigenvalue > 0:
        return 1.0
    gamma = 1.0 / math.sqrt(largest_eigenvalue)
    beta = -math.expm1(-2.0 * gamma * step_size * n_leapfrog)
    return float(min(1.0, max(1e-3, beta)))


def _representatives(lam: Any, max_count: int = 256) -> Any:
    """At most ``max_count`` eigenvalues standing for all (quantiles, weights kept by
    repetition in the sum), so the criterion costs ``O(M_max · 256)`` in any dimension."""
    if lam.shape[0] <= max_count:
        return lam
    # each quantile stands for size/max_count eigenvalues: a common factor of the
    # criterion, which leaves its maximiser where it was
    return namespace(lam).quantile(lam, (np.arange(max_count) + 0.5) / max_count)


__all__ = [
    "MAX_N_LEAPFROG",
    "chees_n_leapfrog",
    "jittered_lengths",
    "meads_beta",
    "whitened_eigenvalues",
]
