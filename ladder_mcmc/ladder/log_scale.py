"""The log-scale walk: a map on positive variables that changes volume (docs/design.md §13).

A positive variable ``x`` is moved multiplicatively, ``L(x, v) = (x·e^{εv}, v)``, by a
velocity ``v ~ N(0, I)`` carried in the state; with the flip ``F(x, v) = (x, −v)``,
``F L F = L⁻¹``. The map is reversible but stretches volume: ``|det ∂L/∂(x, v)| =
e^{ε Σ v}``, which it declares (``log_det_jacobian = ε Σ_i v_i``), so every rule weighs
a rung by it. With the Gaussian ``v`` the extended target is
``p(x) · N(v; 0, I)``, kept by the flip (``N`` is even) and by :class:`LogScaleRefresh`,
the partial refresh of ``v``. Nothing here needs a gradient; this is a random walk in
``log x`` whose direction persists across steps.

It lives beside the other generic maps (:class:`~ladder_mcmc.ladder.cycle.CycleShift`)
rather than in :mod:`ladder_mcmc.hamiltonian`: it integrates no Hamiltonian and has no
kinetic energy, and the ladder subpackage imports nothing Hamiltonian (docs/design.md §8).
"""

from __future__ import annotations

import math
from typing import Any

import attrs
import numpy as np

from ladder_mcmc.arrays import namespace
from ladder_mcmc.ladder.maps import ReversibleMap
from ladder_mcmc.ladder.refresh import Refresh
from ladder_mcmc.models.targets import energy_of
from ladder_mcmc.validation import attrs_converter, positive_finite, randomising_probability

__all__ = ["LogScaleRefresh", "LogScaleState", "LogScaleWalk"]


@attrs.frozen(eq=False)
class LogScaleState:
    """A batch of states of the log-scale walk.

    Attributes
    ----------
    x : float array (chains, dim)
        The positive variables.
    v : float array (chains, dim)
        The log-scale velocity: one map application multiplies ``x`` by ``e^{εv}``.
    """

    x: np.ndarray
    v: np.ndarray


@attrs.frozen(eq=False)
class LogScaleWalk(ReversibleMap):
    """``(x, v) → (x·e^{εv}, v)``: a multiplicative walk on ``x > 0`` (docs/design.md §13).

    The target is ``p(x) · N(v; 0, I)`` with ``p(x) ∝ exp(−E(x))`` on the positive
    orthant; ``log |det ∂L/∂(x, v)| = ε Σ_i v_i`` is declared, so the map is never
    taken for a volume-preserving one.

    Parameters
    ----------
    target : Target
        Anything with ``energy(x)`` for ``x`` of shape (chains, dim), ``x > 0``
        (e.g. :class:`~ladder_mcmc.models.exact_targets.GammaTarget`); no gradient is used.
        States with a coordinate ``≤ 0`` have density zero. In the JAX loop a target
        with a ``jax_potential`` is evaluated by JAX, any other must write ``energy``
        with the namespace of its input (:func:`~ladder_mcmc.models.targets.energy_of`).
    step_size : float
        ``ε > 0``, the step in ``log x`` per unit velocity.

    Examples
    --------
    >>> import numpy as np
    >>> from ladder_mcmc import LookAhead, sample
    >>> from ladder_mcmc.models import GammaTarget
    >>> walk = LogScaleWalk(GammaTarget(3.0, 2.0), step_size=0.5)
    >>> state = LogScaleState(np.array([[1.0]]), np.array([[2.0]]))
    >>> float(walk.forward(state).x[0, 0]) == float(np.e)
    True
    >>> walk.log_det_jacobian(state)
    array([1.])
    >>> kernel = LookAhead(walk, max_rungs=3, refresh=LogScaleRefresh(0.5))
    >>> trace = sample(kernel, np.ones((4, 1)), 20, seed=0)
    >>> trace.states.shape
    (20, 4, 1)
    """

    target: Any
    step_size: float = attrs.field(converter=attrs_converter(positive_finite, "step_size"))

    def __attrs_post_init__(self) -> None:
        if not callable(getattr(self.target, "energy", None)):
            raise ValueError(
                f"target must have an energy(x) method, got {type(self.target).__name__}"
            )

    def forward(self, state: LogScaleState) -> LogScaleState:
        """``(x·e^{εv}, v)``."""
        xp = namespace(state.x, state.v)
        return LogScaleState(state.x * xp.exp(self.step_size * state.v), state.v)

    def flip(self, state: LogScaleState) -> LogScaleState:
        """``(x, −v)``: an involution that keeps the density and volume."""
        return LogScaleState(state.x, -state.v)

    def log_density(self, state: LogScaleState) -> np.ndarray:
        """``−E(x) − |v|²/2``; ``−inf`` where a coordinate of ``x`` is not positive."""
        xp = namespace(state.x, state.v)
        x = xp.asarray(state.x, dtype=xp.float64)
        inside = (x > 0).all(axis=1)
        energy = energy_of(self.target, xp.where(x > 0, x, 1.0))
        v = xp.asarray(state.v, dtype=xp.float64)
        return xp.where(inside, -energy - 0.5 * xp.einsum("ij,ij->i", v, v), -xp.inf)

    def log_det_jacobian(self, state: LogScaleState) -> np.ndarray:
        """``ε Σ_i v_i``: ``∂L/∂(x, v)`` is triangular with diagonal ``(e^{εv}, 1)``."""
        xp = namespace(state.v)
        return self.step_size * xp.asarray(state.v, dtype=xp.float64).sum(axis=1)

    def prepare(self, init: Any, rng: np.random.Generator) -> LogScaleState:
        """A state from positive positions ``x`` (chains, dim), ``v`` drawn from ``N(0, I)``.

        A :class:`LogScaleState` is kept as it is.

        Raises
        ------
        ValueError
            If ``x`` is not a (chains, dim) array of finite positive numbers, or a given
            ``v`` is not finite of the same shape.
        """
        if isinstance(init, LogScaleState):
            x, v = np.asarray(init.x, dtype=float), np.asarray(init.v, dtype=float)
        else:
            x, v = np.asarray(init, dtype=float), None
        if x.ndim != 2 or x.shape[0] < 1 or x.shape[1] < 1:
            raise ValueError(f"init must be an array of shape (chains, dim), got shape {x.shape}")
        if not np.all(np.isfinite(x) & (x > 0)):
            bad = np.flatnonzero(~(np.isfinite(x) & (x > 0)).all(axis=1))
            raise ValueError(f"init must be finite and positive; chains {bad.tolist()} are not")
        if v is None:
            v = rng.standard_normal(x.shape)
        elif v.shape != x.shape or not np.all(np.isfinite(v)):
            raise ValueError(f"init.v must be finite with shape {x.shape}, got {v.shape}")
        return LogScaleState(x, v)

    def draw(self, state: LogScaleState) -> np.ndarray:
        """The positions ``x``."""
        return state.x

    def describe(self) -> dict:
        return {
            "map": "LogScaleWalk",
            "target": type(self.target).__name__,
            "step_size": float(self.step_size),
        }


def _as_beta(value: object) -> float:
    why = "β = 0 never refreshes v, so x only moves along one ladder; omit the refresh instead"
    return float(randomising_probability("beta", value, why))


@attrs.frozen
class LogScaleRefresh(Refresh):
    """Partial refresh of the log-scale velocity: ``v' = √(1−β) v + √β n``, ``n ~ N(0, I)``.

    Keeps ``N(v; 0, I)`` and its independence of ``x`` and ``d``, so it keeps the
    extended target (docs/design.md §6); the noise is added to the physical velocity
    ``d·v``, as :class:`~ladder_mcmc.hamiltonian.momentum.MomentumRefresh` does.

    Parameters
    ----------
    beta : float in (0, 1]
        Fraction of ``v``'s variance replaced per step; ``1`` draws a fresh ``v``.
    """

    beta: float = attrs.field(converter=_as_beta)

    def __call__(self, state, direction, rng):
        noise = direction[:, None] * rng.standard_normal(state.v.shape)
        if self.beta == 1:
            v = noise
        else:
            v = math.sqrt(1.0 - self.beta) * state.v + math.sqrt(self.beta) * noise
        return LogScaleState(state.x, v), direction

    def describe(self) -> dict:
        return {"refresh": "LogScaleRefresh", "beta": self.beta}
