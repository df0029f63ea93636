"""The momentum refreshes of the leapfrog ladder: partial refresh ``R(β)`` (paper, section 3.3.3).

* :class:`MomentumRefresh` — ``v' = √(1−β) v + √β n``, ``n ~ N(0, M)``, on a Gaussian
  kinetic energy (:class:`~ladder_mcmc.hamiltonian.metrics.Metric`): the paper's refresh;
* :class:`NormalizedMomentumRefresh` — the same blend in normal coordinates
  ``z = T(d·v)`` for any kinetic energy with an exact normal transform
  (:class:`~ladder_mcmc.hamiltonian.kinetic.PowerKinetic`): exact for every ``β``.

Both are :class:`~ladder_mcmc.ladder.refresh.Refresh` operators and declare the kinetic
energy whose momentum law they keep (``kinetic_energies``), which ``Ladder`` holds to
the map's. Both are written against the namespace of their inputs
(:mod:`ladder_mcmc.arrays`); ``β`` is a traced leaf of a compiled kernel (warm-up adapts it).
"""

from __future__ import annotations

import math

import attrs
import numpy as np

from ladder_mcmc.arrays import TRACED, is_traced, namespace
from ladder_mcmc.hamiltonian.kinetic import PowerKinetic
from ladder_mcmc.hamiltonian.metrics import Metric
from ladder_mcmc.ladder import batch
from ladder_mcmc.ladder.refresh import Refresh
from ladder_mcmc.validation import positive_finite, positive_int, randomising_probability

#: Why ``β = 0`` is refused, and what to use instead (the message of every partial refresh).
NO_REFRESH = (
    "β = 0 never refreshes the momentum, so the chain is deterministic between flips and "
    "not ergodic (its diagnostics look perfect); use a small β > 0 for persistent momentum, "
    "or omit the refresh (Ladder(map, rule, None)) if you want none"
)


def _sqrt(value):
    """``√value`` of a number (``math.sqrt``) or of a traced one (its namespace's)."""
    return namespace(value).sqrt(value) if is_traced(value) else math.sqrt(value)


def as_beta(value: object) -> float:
    """A partial refresh's ``β`` as a float, or ``ValueError`` unless it is in ``(0, 1]``."""
    value = randomising_probability("beta", value, NO_REFRESH)
    return value if is_traced(value) else float(value)


@attrs.frozen
class MomentumRefresh(Refresh):
    """Partial momentum refresh ``R(β)`` (paper, section 3.3.3).

    ``v' = √(1−β) v + √β n``, ``n ~ N(0, M)``. The noise is applied to the
    physical momentum ``d·v`` (the direction ``d`` is the momentum's sign on the
    ladder), so with the same generator this is draw for draw the textbook
    persistent-HMC refresh; in law it is the same either way.

    Parameters
    ----------
    beta : float in (0, 1]
        Fraction of the momentum's variance replaced by noise per step;
        ``1`` = full refresh (standard HMC), small = persistent momentum. ``0``
        (no noise: a chain deterministic between flips) is refused; omit the
        refresh instead.
    metric : Metric
        The mass matrix the momentum is drawn from (identity by default). Another
        kinetic energy (e.g. ``PowerKinetic``) is accepted only with ``beta = 1``:
        the blend above keeps a Gaussian law only.
    """

    beta: float = attrs.field(converter=as_beta, metadata=TRACED)
    metric: Metric = attrs.field(factory=Metric)

    def __attrs_post_init__(self) -> None:
        partial = is_traced(self.beta) or self.beta != 1
        if partial and not isinstance(self.metric, Metric):
            raise ValueError(
                f"MomentumRefresh(beta={self.beta!r}) on the non-Gaussian kinetic energy "
                f"{self.metric!r}: blending √(1−β) v + √β n keeps only a Gaussian momentum "
                "law; use NormalizedMomentumRefresh(beta, kinetic) for a partial refresh, or "
                "beta=1 (a full redraw)"
            )

    @classmethod
    def from_alpha(
        cls, alpha: float, step_size: float, n_steps: int, metric: Metric | None = None
    ) -> MomentumRefresh:
        """``β = α^{1/(ε M)}``: a fraction ``α`` randomised per unit simulation time.

        Paper, footnote in section 3.4 (after Culpepper et al. 2011). ``α`` in
        ``(0, 1]`` (``α = 0`` would give ``β = 0``, no refresh).
        """
        alpha = randomising_probability("alpha", alpha, NO_REFRESH.replace("β", "α"))
        step_size = positive_finite("step_size", step_size)
        n_steps = positive_int("n_steps", n_steps)
        beta = math.pow(alpha, 1.0 / (step_size * n_steps))
        return cls(beta, metric if metric is not None else Metric())

    def __call__(self, state, direction, rng):
        v = state.v
        momentum = self.metric.sample_momentum(rng, v.shape)
        if type(direction) is np.ndarray and type(momentum) is np.ndarray:
            # on the host: ±1 as floats first (exact), a faster product than int8 × float
            noise = direction.astype(momentum.dtype)[:, None] * momentum
        else:
            noise = direction[:, None] * momentum
        beta = self.beta
        if not is_traced(beta):
            if beta == 1:
                return batch.replace(state, v=noise), direction
            return batch.replace(
                state, v=math.sqrt(1.0 - beta) * v + math.sqrt(beta) * noise
            ), direction
        # β traced (a compiled kernel): β = 1 is a value, not a branch; the redraw exactly
        xp = namespace(noise, beta)
        blend = xp.sqrt(1.0 - beta) * v + xp.sqrt(beta) * noise
        return attrs.evolve(state, v=xp.where(beta == 1, noise, blend)), direction

    def describe(self) -> dict:
        return {"refresh": "MomentumRefresh", "beta": self.beta, **self.metric.describe()}

    @property
    def kinetic_energies(self) -> tuple:
        """``(metric,)``: the momenta are drawn from ``metric``'s ``exp(-K)``."""
        return (self.metric,)


@attrs.frozen
class NormalizedMomentumRefresh(Refresh):
    """Partial momentum refresh ``R(β)`` for a kinetic energy with a normal transform.

    ``z = T(d·v)``, ``z' = √(1-β) z + √β n`` with ``n ~ N(0, I)``, ``v' = d·T⁻¹(z')``,
    where ``T = kinetic.to_normal`` maps ``exp(-K)`` to ``N(0, I)`` coordinate by
    coordinate (``d`` is the ladder direction, so the noise acts on the physical
    momentum as in :class:`ladder_mcmc.hamiltonian.momentum.MomentumRefresh`; ``T`` is odd, so in
    law it makes no difference). The step in ``z`` keeps ``N(0, I)``, hence the
    refresh keeps ``exp(-K)`` — and the ladder's ``p(x, v, d)`` — invariant for any
    ``β``. ``β = 1`` draws a fresh momentum; small ``β`` gives persistent momentum
    with a non-Gaussian kinetic energy.

    Parameters
    ----------
    beta : float in (0, 1]
        Fraction of the normalised momentum's variance replaced by noise per step
        (``0``, no noise, is refused as for :class:`MomentumRefresh`).
    kinetic : PowerKinetic
        Anything with ``to_normal``, ``from_normal`` and ``sample_momentum``.

    Raises
    ------
    ValueError
        If ``beta`` is not in (0, 1] or ``kinetic`` lacks ``to_normal``/``from_normal``.

    Examples
    --------
    >>> import numpy as np
    >>> from ladder_mcmc.hamiltonian import NormalizedMomentumRefresh, PowerKinetic
    >>> kin = PowerKinetic(1.5, np.ones(3))
    >>> refresh = NormalizedMomentumRefresh(0.2, kin)
    >>> rng = np.random.default_rng(0)
    >>> v = kin.sample_momentum(rng, (100_000, 3))
    >>> z = kin.to_normal(v)
    >>> bool(abs(z.std() - 1) < 0.01 and np.allclose(kin.from_normal(z), v))
    True
    """

    beta: float = attrs.field(converter=as_beta, metadata=TRACED)
    kinetic: PowerKinetic = attrs.field()
    #: ``β = 1``: a full redraw (``kinetic.sample_momentum``, uniforms) rather than the
    #: blend (normals). Which numbers the refresh draws is part of a compiled kernel's
    #: structure, so this is a static field: ``β == 1`` for a ``β`` known on the host; for
    #: a ``β`` traced inside a compiled function (a part rebuilt there) the value given,
    #: as ``attrs.evolve`` passes it on, or the blend.
    full: bool | None = attrs.field(default=None, kw_only=True, repr=False, eq=False)

    def __attrs_post_init__(self) -> None:
        if not is_traced(self.beta):
            object.__setattr__(self, "full", self.beta == 1)
        elif self.full is None:
            object.__setattr__(self, "full", False)

    @kinetic.validator
    def _check_kinetic(self, _attr, value) -> None:
        for name in ("to_normal", "from_normal", "sample_momentum"):
            if not callable(getattr(value, name, None)):
                raise ValueError(
                    f"kinetic must provide {name}() (e.g. a PowerKinetic), "
                    f"got {type(value).__name__}"
                )

    @property
    def kinetic_energies(self) -> tuple:
        """``(kinetic,)``: the kinetic energy whose ``exp(-K)`` this refresh keeps."""
        return (self.kinetic,)

    def __call__(self, state, direction, rng):
        v = state.v
        xp = namespace(v, direction)
        d = direction[:, None].astype(xp.float64)
        if self.full:
            v_new = d * self.kinetic.sample_momentum(rng, v.shape)
        else:
            z = self.kinetic.to_normal(d * v)
            z = _sqrt(1.0 - self.beta) * z + _sqrt(self.beta) * rng.standard_normal(v.shape)
            v_new = d * self.kinetic.from_normal(z)
        return attrs.evolve(state, v=v_new), direction

    def describe(self) -> dict:
        return {
            "refresh": "NormalizedMomentumRefresh",
            "beta": float(self.beta),
            **self.kinetic.describe(),
        }
