"""Kinetic energies for the leapfrog ladder: the interface, and a non-Gaussian one.

The leapfrog map (:class:`ladder_mcmc.hamiltonian.leapfrog.Leapfrog`) uses its
``metric`` only through ``velocity(v) = ∇K(v)``, ``kinetic(v) = K(v)`` and
``sample_momentum``; any separable kinetic energy with an odd ``∇K`` gives a valid
ladder map: the three sub-steps of a leapfrog step (kick ``v -= ε/2 ∇E(x)``, drift ``x
+= ε ∇K(v)``, kick) are shears, so the map preserves volume, and ``F L F = L⁻¹`` with
the flip ``F v = -v`` because ``∇K`` is odd. The joint density is ``exp(-E(x) - K(v))``.

* :class:`KineticEnergy` — that interface written down (a ``typing.Protocol``),
  satisfied by :class:`~ladder_mcmc.hamiltonian.metrics.Metric` and
  :class:`PowerKinetic`. Both are written against the namespace of their inputs
  (:mod:`ladder_mcmc.arrays`): numpy arrays, or JAX values inside the compiled loop.
* :class:`PowerKinetic` — ``K(v) = Σ_i |w_i|^a / a`` with ``w_i = v_i √m_i`` (``m``
  the diagonal inverse mass); ``a = 2`` is the Gaussian momentum, ``1 < a < 2`` has
  heavier (exponential-power) tails: a coordinate's kinetic energy
  ``|w_i|^a / a ~ Gamma(1/a, 1)`` exceeds a barrier of height ``h`` more often
  (``P(K_i > 2)`` is 0.046 for ``a = 2``, 0.071 for ``a = 1.5``). Useful on rough
  landscapes (the paper's rough well, ``benchmarks/results/against_nuts.md``).

Its exact partial refresh, for any kinetic energy with a coordinate-wise transform
to standard normals (``to_normal``), is
:class:`~ladder_mcmc.hamiltonian.momentum.NormalizedMomentumRefresh`: each momentum
coordinate is mapped to ``z = Φ⁻¹(F(w))`` (``F`` its CDF under ``exp(-K)``), moved
by ``z' = √(1-β) z + √β n`` and mapped back. ``exp(-K)`` is the image of
``N(0, I)`` under the inverse transform and the autoregressive step keeps
``N(0, I)``, so the refresh keeps ``exp(-K)`` invariant by construction; for the
Gaussian it is exactly :class:`~ladder_mcmc.hamiltonian.momentum.MomentumRefresh`.
"""

from __future__ import annotations

import math
from typing import Protocol, runtime_checkable

import attrs
import numpy as np

from ladder_mcmc.arrays import inverse_gamma_tails, is_traced, namespace
from ladder_mcmc.arrays import special as arrays_special
from ladder_mcmc.validation import in_open_closed


@runtime_checkable
class KineticEnergy(Protocol):
    """A separable kinetic energy ``K(v)``: what :class:`~.leapfrog.Leapfrog` integrates.

    The joint density is ``exp(-E(x) - K(v))``; ``∇K`` must be odd (see the module
    notes). :class:`~ladder_mcmc.hamiltonian.metrics.Metric` (``K = ½ vᵀ M⁻¹ v``) and
    :class:`PowerKinetic` satisfy it.

    Attributes
    ----------
    dim : int or None
        The momentum's dimension (``None``: any).
    """

    @property
    def dim(self) -> int | None: ...

    def kinetic(self, v: np.ndarray) -> np.ndarray:
        """``K(v)`` per chain, shape (chains,)."""
        ...

    def velocity(self, v: np.ndarray) -> np.ndarray:
        """``dx/dt = ∇K(v)`` for a batch (chains, dim)."""
        ...

    def sample_momentum(self, rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
        """Draws from ``exp(-K)``, shape (chains, dim)."""
        ...

    def describe(self) -> dict:
        """A JSON-able description (in checkpoints and reports)."""
        ...


def _as_power(value: object) -> float:
    why = " (a <= 1 makes the velocity |w|^(a-1) discontinuous or singular at 0)"
    return in_open_closed("a", value, 1, 2, why)


def _as_diagonal(value: object) -> np.ndarray:
    if is_traced(value):  # computed inside a compiled function: as it is, unchecked
        return value
    arr = np.asarray(value, dtype=float)
    if arr.ndim != 1 or arr.size < 1 or not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(
            f"inverse_mass must be a non-empty vector of finite positive numbers "
            f"(a diagonal inverse mass), got {value!r}"
        )
    return arr


@attrs.frozen(eq=False)
class PowerKinetic:
    """Exponential-power kinetic energy ``K(v) = Σ_i |v_i √m_i|^a / a``.

    A drop-in for :class:`ladder_mcmc.hamiltonian.metrics.Metric` in
    :class:`ladder_mcmc.hamiltonian.leapfrog.Leapfrog`. In the whitened momentum ``w = v √m`` each
    coordinate has density ``∝ exp(-|w|^a / a)``, i.e. ``|w|^a/a ~ Gamma(1/a, 1)``;
    the velocity is ``dx/dt = √m sign(w) |w|^{a-1}`` (for ``a = 2``: ``m v``, the
    Gaussian metric with diagonal inverse mass ``m``).

    Parameters
    ----------
    a : float in (1, 2]
        The exponent; smaller is heavier-tailed (more time above a barrier) but the
        velocity gets steeper near ``w = 0`` (a smaller stable step size).
    inverse_mass : array (dim,)
        Diagonal inverse mass ``m`` (a scale estimate of the target's variances, as
        for :class:`~ladder_mcmc.hamiltonian.metrics.Metric`).

    Raises
    ------
    ValueError
        If ``a`` is not in (1, 2] or ``inverse_mass`` is not a positive finite vector.

    Examples
    --------
    >>> import numpy as np
    >>> from ladder_mcmc import Ladder, Leapfrog, LookAheadRule, sample
    >>> from ladder_mcmc.hamiltonian import NormalizedMomentumRefresh, PowerKinetic
    >>> from ladder_mcmc.models import RoughWell
    >>> target = RoughWell()
    >>> kin = PowerKinetic(1.5, np.full(2, 1e4))
    >>> kernel = Ladder(
    ...     Leapfrog(target, 0.01, 20, kin), LookAheadRule(4), NormalizedMomentumRefresh(0.3, kin)
    ... )
    >>> trace = sample(kernel, np.zeros((4, 2)), 100, seed=0)
    >>> trace.positions.shape
    (100, 4, 2)
    """

    a: float = attrs.field(converter=_as_power)
    inverse_mass: np.ndarray = attrs.field(converter=_as_diagonal)
    _sqrt_m: np.ndarray = attrs.field(init=False, repr=False)

    @_sqrt_m.default
    def _sqrt_inverse_mass(self) -> np.ndarray:
        # computed once: ``velocity`` runs at every leapfrog step
        return namespace(self.inverse_mass).sqrt(self.inverse_mass)

    @property
    def dim(self) -> int:
        return int(self.inverse_mass.shape[0])

    def velocity(self, v: np.ndarray) -> np.ndarray:
        """``∇K(v) = √m sign(w) |w|^{a-1}``, ``w = v √m``, for a batch (chains, dim)."""
        s = self._sqrt_m
        w = v * s
        if self.a == 2.0:
            return s * w
        # copysign(|w|^(a-1), w) is sign(w)·|w|^(a-1) with one operation fewer
        xp = namespace(w)
        return s * xp.copysign(xp.abs(w) ** (self.a - 1.0), w)

    def kinetic(self, v: np.ndarray) -> np.ndarray:
        """``K(v) = Σ_i |w_i|^a / a`` per chain, shape (chains,)."""
        w = v * self._sqrt_m
        return (namespace(w).abs(w) ** self.a).sum(axis=1) / self.a

    def sample_momentum(self, rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
        """Draws from ``exp(-K)``: ``|w|^a/a ~ Gamma(1/a, 1)``, random sign.

        ``rng.gamma`` then ``rng.random``, each of ``shape``: ``2·dim`` uniforms per chain
        from per-chain streams (whose gamma is the inverse incomplete gamma of a uniform).
        """
        g = rng.gamma(1.0 / self.a, 1.0, size=shape)
        xp = namespace(g)
        sign = xp.where(rng.random(shape) < 0.5, 1.0, -1.0)
        return sign * (self.a * g) ** (1.0 / self.a) / self._sqrt_m

    def to_normal(self, v: np.ndarray) -> np.ndarray:
        """``z = Φ⁻¹(F(w))`` per coordinate: standard normal when ``v ~ exp(-K)``.

        With ``y = |w|^a/a`` and ``P = P(1/a, y)`` (regularised lower incomplete
        gamma), ``F(w) = (1 + sign(w) P)/2``, so ``|z| = √2 erf⁻¹(P)``; for
        ``P > ½`` it is computed as ``-Φ⁻¹(Q/2)`` from the upper ``Q = 1 - P`` to
        keep the tails accurate. Odd in ``v``.
        """
        s = 1.0 / self.a
        w = v * self._sqrt_m
        xp = namespace(w)
        special = arrays_special(xp)
        y = xp.abs(w) ** self.a / self.a
        p = special.gammainc(s, y)
        q = special.gammaincc(s, y)
        with np.errstate(all="ignore"):
            small = math.sqrt(2.0) * special.erfinv(xp.minimum(p, 0.5))
            large = -special.ndtri(0.5 * q)
        return xp.sign(w) * xp.where(p <= 0.5, small, large)

    def from_normal(self, z: np.ndarray) -> np.ndarray:
        """The inverse of :meth:`to_normal`: ``v = F⁻¹(Φ(z)) / √m``. Odd in ``z``."""
        s = 1.0 / self.a
        xp = namespace(z)
        special = arrays_special(xp)
        az = xp.abs(z)
        p = special.erf(az / math.sqrt(2.0))
        q = 2.0 * special.ndtr(-az)
        y = inverse_gamma_tails(xp, s, p, q)
        return xp.sign(z) * (self.a * y) ** s / self._sqrt_m

    def with_inverse_mass(self, inverse_mass: np.ndarray) -> PowerKinetic:
        """The same exponent with a new diagonal inverse mass (for a warm-up that adapts it).

        Raises
        ------
        ValueError
            If ``inverse_mass`` is not a positive finite vector (e.g. a dense matrix).
        """
        return PowerKinetic(self.a, inverse_mass)

    def describe(self) -> dict:
        return {"metric": f"power-{self.a:g} diagonal"}
