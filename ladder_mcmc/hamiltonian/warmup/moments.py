"""The positions' variance (or covariance) over a warm-up window, a batch at a time.

Pure ``init``, ``update`` and ``final`` on a :class:`Moments` state (Chan, Golub &
LeVeque's pairwise update of the mean and the sum of squared deviations, a batch of
draws at once: a sub-block's, its steps and chains pooled), written with the namespace
of its values: the compiled loop accumulates a window's draws as it takes them, and
keeps none. ``final`` is Stan's regularised estimate, shrunk towards ``10⁻³ I``:
``(n/(n+5)) Σ̂ + 10⁻³ (5/(n+5)) I`` (``n`` the draws pooled over chains and steps).

Before the first window, :func:`initial_inverse_mass` guesses the mass from the gradient
at the initial points (docs/design/warmup.md, §12).
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from ladder_mcmc.arrays import namespace


@attrs.frozen(eq=False)
class Moments:
    """``count`` draws so far, their ``mean`` (dim,) and sum of squared deviations
    ``m2``: (dim,) for a diagonal, (dim, dim) for a dense estimate."""

    count: Any
    mean: Any
    m2: Any


def init(dim: int, dense: bool, xp: Any) -> Moments:
    """No draws yet."""
    shape = (dim, dim) if dense else (dim,)
    return Moments(xp.zeros((), dtype=xp.float64), xp.zeros(dim), xp.zeros(shape))


def update(m: Moments, x: Any, keep: Any = True, rows: Any = None) -> Moments:
    """Add the draws ``x`` (draws, dim), where ``keep`` (a boolean scalar); ``rows``
    (booleans (draws,)): only those draws (none: no change)."""
    xp = namespace(m.mean, x)
    if rows is None:
        k = x.shape[0]
        batch_mean = xp.mean(x, axis=0)
        centred = x - batch_mean
    else:
        w = xp.asarray(rows, dtype=xp.float64)
        k = xp.sum(w)
        keep = keep & (k > 0)
        batch_mean = xp.sum(w[:, None] * x, axis=0) / xp.maximum(k, 1.0)
        centred = (x - batch_mean) * w[:, None]
    count = m.count + k
    delta = batch_mean - m.mean
    mean = m.mean + delta * (k / xp.maximum(count, 1.0))
    weight = m.count * k / xp.maximum(count, 1.0)
    if m.m2.ndim == 2:
        m2 = m.m2 + centred.T @ centred + weight * xp.outer(delta, delta)
    else:
        m2 = m.m2 + xp.sum(centred * centred, axis=0) + weight * delta * delta
    return Moments(
        xp.where(keep, count, m.count), xp.where(keep, mean, m.mean), xp.where(keep, m2, m.m2)
    )


def covariance(m: Moments) -> Any:
    """The sample (co)variance (``ddof = 1``); a dense one exactly symmetric."""
    cov = m.m2 / (m.count - 1.0)
    if cov.ndim == 2:
        cov = (cov + cov.T) / 2
    return cov


def regularised(m: Moments) -> Any:
    """Stan's shrinkage of :func:`covariance` towards ``10⁻³ I``."""
    xp = namespace(m.m2)
    n = m.count
    cov = covariance(m)
    shrink = 1e-3 * (5.0 / (n + 5.0))
    if cov.ndim == 2:
        return (n / (n + 5.0)) * cov + shrink * xp.eye(cov.shape[0])
    return (n / (n + 5.0)) * cov + shrink


#: the first inverse mass is ``1/|∂E/∂x_i|`` clipped to this range (at most the unit
#: mass's 1), and 1 where the gradient is zero or not finite
INITIAL_INVERSE_MASS = (1e-3, 1.0)


def initial_inverse_mass(grad: Any, dim: int, dense: bool) -> Any:
    """The inverse mass before any window, from ``grad`` (chains, dim), the energy's
    gradient at the initial points (numpy): ``1/|∂E/∂x_i|``, the magnitude averaged over
    chains, clipped to :data:`INITIAL_INVERSE_MASS`; diagonal, or that diagonal as a
    dense matrix (ones where ``grad`` is None or not of shape (chains, ``dim``)).

    Far from a mode of width ``σ_i``, ``|∂E/∂x_i| ≈ D/σ_i²`` at a distance ``D``: the
    guess is ``σ_i²/D``, so the first steps move the narrow coordinates less than the
    wide ones (nutpie's starting guess). Near a mode the gradient is small and says
    nothing of the width, hence at most 1, the unit mass a window would otherwise
    start from. The mean, not the median, over chains: a chain far out shrinks the
    guess for all (smaller first steps), rather than being left with a mass too large
    for it to move.
    """
    g = None if grad is None else np.asarray(grad, dtype=np.float64)
    if g is None or g.ndim != 2 or g.shape[1] != dim:
        g = np.zeros((1, dim))
    g = np.mean(np.abs(g), axis=0)
    ok = np.isfinite(g) & (g > 0)
    lo, hi = INITIAL_INVERSE_MASS
    inverse = np.where(ok, np.clip(1.0 / np.where(ok, g, 1.0), lo, hi), 1.0)
    return np.diag(inverse) if dense else inverse


__all__ = [
    "INITIAL_INVERSE_MASS",
    "Moments",
    "covariance",
    "init",
    "initial_inverse_mass",
    "regularised",
    "update",
]
