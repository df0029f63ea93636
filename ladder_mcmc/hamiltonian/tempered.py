"""Tempered leapfrog trajectories (Neal 1996; 2011, section 5.7) as a ladder map.

One application of :class:`TemperedLeapfrog` is ``M`` leapfrog steps in which the
momentum is multiplied by ``√α`` before each step of the first half and divided by
``√α`` after each step of the second half (the middle step of an odd ``M`` is left
alone). In the middle of the rung the momentum is ``heat^{1/2}`` times larger than
the dynamics alone would make it (a Gaussian kinetic energy ``heat`` times larger):
the trajectory is "heated" — it can cross energy barriers that it could not at the
target's temperature — and then cools down again.

Why it is a valid ladder map:

* **volume**: multiplying ``v`` by ``√α`` scales volume by ``α^{dim/2}``; the first
  half does that ``⌊M/2⌋`` times and the second half undoes it as many times, and the
  leapfrog steps are volume preserving, so the whole rung preserves volume (the
  rung, not each step — only whole rungs are ever used);
* **reversibility**: the rung is the palindrome ``S ∘ LF … S ∘ LF ∘ LF ∘ U … LF ∘ U``
  (``U`` = times ``√α``, ``S = U⁻¹``, ``LF`` a leapfrog step with ``F LF F = LF⁻¹``),
  whose inverse ``U⁻¹ LF⁻¹ … = S ∘ F LF F …`` is ``F L F``;

and the ladder's acceptance uses the untempered ``-E(x) - K(v)`` at the rung's ends.
"""

from __future__ import annotations

import math

import attrs
import numpy as np

from ladder_mcmc.arrays import fori_loop, is_jax, is_traced, namespace
from ladder_mcmc.hamiltonian.leapfrog import Leapfrog, PhaseState
from ladder_mcmc.models.targets import energy_and_grad, gradient
from ladder_mcmc.validation import positive_finite


def _check_heat(_inst, attr, value) -> None:
    positive_finite(attr.name, value)
    if value < 1:
        raise ValueError(f"heat must be >= 1 (1 = plain leapfrog), got {value!r}")


@attrs.frozen(eq=False)
class TemperedLeapfrog(Leapfrog):
    """``M`` leapfrog steps with the momentum heated by ``heat^{1/2}`` towards the middle.

    Parameters
    ----------
    target, step_size, n_steps, metric
        As :class:`~ladder_mcmc.hamiltonian.leapfrog.Leapfrog` (``metric`` may be any metric-like
        object, e.g. :class:`~ladder_mcmc.hamiltonian.kinetic.PowerKinetic`).
    heat : float ≥ 1
        Factor by which the momentum's square is multiplied at the middle of the
        rung: ``√α = heat^{1/(2⌊M/2⌋)}`` per step. ``1`` is plain leapfrog.

    Raises
    ------
    ValueError
        If ``heat`` is not a finite number ``≥ 1`` (or the leapfrog parameters are bad).

    Examples
    --------
    >>> import numpy as np
    >>> from ladder_mcmc import LookAhead, MomentumRefresh, sample
    >>> from ladder_mcmc.models import RoughWell
    >>> from ladder_mcmc.verify import assert_map
    >>> target = RoughWell()
    >>> tempered = TemperedLeapfrog(target, step_size=0.3, n_steps=20, heat=4.0)
    >>> rng = np.random.default_rng(0)
    >>> assert_map(tempered, tempered.prepare(rng.normal(0, 50, (5, 2)), rng)).ok
    True
    >>> kernel = LookAhead(tempered, max_rungs=4, refresh=MomentumRefresh(1.0))
    >>> sample(kernel, np.zeros((4, 2)), 50, seed=1).positions.shape
    (50, 4, 2)
    """

    heat: float = attrs.field(default=1.0, validator=_check_heat)

    def integrate(self, x: np.ndarray, v: np.ndarray, grad: np.ndarray) -> PhaseState:
        """The tempered rung from ``(x, v)`` (``v`` already times the direction).

        Step ``i`` of ``M``: ``v ← √α v`` if ``i < ⌊M/2⌋``, kick ``ε/2``, drift ``ε``,
        kick ``ε/2``, ``v ← v / √α`` if ``i ≥ M − ⌊M/2⌋`` (a factor of 1 otherwise, which
        is exact); the gradient of the last drift comes with the energy. ``n_steps``
        may be traced: the first ``M − 1`` steps are a ``fori_loop``.
        """
        eps = self.step_size
        vel = self.metric.velocity
        target = self.target
        m = self.n_steps
        half = m // 2
        xp = namespace(x, v, grad, eps, m)
        if is_traced(m) or is_jax(m):
            up = xp.where(half > 0, float(self.heat) ** (0.5 / xp.maximum(half, 1)), 1.0)
        else:
            up = math.pow(float(self.heat), 0.5 / half) if half else 1.0

        def heat_up(i, v):
            return v * xp.where(i < half, up, 1.0)

        def cool_down(i, v):
            return v / xp.where(i >= m - half, up, 1.0)

        def step(i, xvg):
            x, v, g = xvg
            v = heat_up(i, v) - (0.5 * eps) * g
            x = x + eps * vel(v)
            g = gradient(target, x)
            return x, cool_down(i, v - (0.5 * eps) * g), g

        x, v, g = fori_loop(0, m - 1, step, (x, v, grad))
        last = m - 1
        v = heat_up(last, v) - (0.5 * eps) * g
        x = x + eps * vel(v)
        e, g = energy_and_grad(target, x)
        v = cool_down(last, v - (0.5 * eps) * g)
        return PhaseState(x=x, v=v, energy=e, grad=g)

    def describe(self) -> dict:
        return {**super().describe(), "map": "TemperedLeapfrog", "heat": float(self.heat)}
