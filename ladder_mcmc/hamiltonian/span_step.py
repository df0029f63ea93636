"""A leapfrog refined where the target is narrow and lengthened where it is wide.

``α = ℓ``, a level (docs/design.md §14, "A level drawn from the gradient's size"):
:class:`SpanLeapfrog` ``L_ℓ`` is

* at ``ℓ ≥ 0``, ``M 2^ℓ`` steps of ``ε / 2^ℓ``: the time ``M ε`` of level 0, integrated
  more finely (the refined leapfrog of :mod:`~ladder_mcmc.hamiltonian.refined_step`);
* at ``ℓ < 0``, ``M 2^{−ℓ}`` steps of ``ε``: a trajectory ``2^{−ℓ}`` times longer at the
  same step, for where the target is wide (a funnel's mouth, where ``M`` steps of the
  step that suits the neck are a short walk).

Each ``L_ℓ`` is a leapfrog, so it is volume preserving with ``F L_ℓ F = L_ℓ⁻¹``; the
level is drawn from :class:`~ladder_mcmc.hamiltonian.gradient_level.GradientLevelLaw`
(from the cached gradient, no gradient spent) and stays the same at every rung of a
step (§14: the rungs of a step are iterates of one map). One application costs
``M 2^{|ℓ|}`` gradients (:meth:`SpanLeapfrog.cost_of`).

:func:`span_lahmc` is the kernel: look-ahead HMC on this family with that law, its step,
mass, ``M`` and ``β`` adapted by the leapfrog family's warm-up
(:class:`~ladder_mcmc.hamiltonian.warmup.adaptation.HMCAdaptation`: the refined leapfrog's
probe-capped warm-up reads a :class:`~ladder_mcmc.hamiltonian.refined_step.RefinementLaw`'s
probes, which this law has not).
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from ladder_mcmc.arrays import namespace
from ladder_mcmc.hamiltonian.gradient_level import GradientLevelLaw
from ladder_mcmc.hamiltonian.kinetic import KineticEnergy  # noqa: F401  (for the API docs)
from ladder_mcmc.hamiltonian.leapfrog_family import auxiliary_lahmc, leapfrog_start
from ladder_mcmc.hamiltonian.refined_step import RefinedLeapfrog
from ladder_mcmc.hamiltonian.samplers import STARTING_VALUES
from ladder_mcmc.ladder.kernel import Ladder
from ladder_mcmc.models.targets import Target
from ladder_mcmc.validation import positive_int

__all__ = ["SpanLeapfrog", "span_lahmc"]

#: the leapfrog steps per rung at level 0 that warm-up starts from when ``n_steps`` is
#: left to it (the value the fixed-``M`` kernel was measured with on the hard models)
START_N_STEPS = 8


@attrs.frozen(eq=False)
class SpanLeapfrog(RefinedLeapfrog):
    """``L_ℓ``: ``M 2^ℓ`` steps of ``ε / 2^ℓ`` (``ℓ ≥ 0``), ``M 2^{−ℓ}`` steps of ``ε`` (``ℓ < 0``).

    Parameters
    ----------
    target, step_size, metric
        As for :class:`~ladder_mcmc.hamiltonian.leapfrog_family.LeapfrogFamily`.
    n_steps : int
        ``M``, the steps at level 0 (a traced leaf of the compiled loop; warm-up may
        adapt it).

    Notes
    -----
    At ``ℓ ≥ 0`` it is :class:`~ladder_mcmc.hamiltonian.refined_step.RefinedLeapfrog`
    step for step. Its warm-up is the leapfrog family's (not the probe-capped one, which
    needs a :class:`~ladder_mcmc.hamiltonian.refined_step.RefinementLaw`).
    """

    def plan(self, alpha: Any, macro: Any = None) -> tuple[Any, Any]:
        """Level ``ℓ``'s step ``ε / 2^{max(ℓ, 0)}`` and number of steps ``m 2^{|ℓ|}``
        (``m``: ``macro``, default ``M``); :meth:`RefinedLeapfrog.plan`'s forms. Its
        ``forward`` and ``cost_of`` (``m 2^{|ℓ|}`` gradients per chain, the law spends
        none) are :class:`RefinedLeapfrog`'s on this plan."""
        m = self.n_steps if macro is None else macro
        if isinstance(alpha, int):
            return float(self.step_size) / 2 ** max(alpha, 0), int(m) * 2 ** abs(alpha)
        xp = namespace(alpha, m, self.step_size)
        ell = xp.asarray(alpha, dtype=xp.int64)
        m = m if xp is not np else int(m)
        n = (m * 2 ** xp.abs(ell)).astype(xp.int64)
        eps = self.step_size / (2 ** xp.maximum(ell, 0)).astype(xp.float64)
        return eps, n


def span_lahmc(
    target: Target,
    step_size: float | None = None,
    n_steps: int | None = None,
    beta: float | None = None,
    scale: float = 2.0,
    width: float = 2.0,
    min_level: int = -2,
    max_level: int = 4,
    look_ahead: int = 4,
    inverse_mass: np.ndarray | None = None,
) -> Ladder:
    """Look-ahead HMC with the step refined where the gradient is large and the trajectory
    lengthened where it is small, the level drawn from the gradient at no cost.

    ``Ladder(AuxiliaryMap(SpanLeapfrog, law), LookAheadRule(K),
    InnerRefresh(MomentumRefresh(β)) + AuxiliaryRefresh(law))`` with
    ``law = GradientLevelLaw(ε, c, w, ℓ_min, ℓ_max)``. For hierarchical funnels and
    centred hierarchical models (``docs/how-to/multiscale.md``); on smooth targets it
    costs several times :func:`~ladder_mcmc.lahmc`'s gradients per effective draw.

    What is left unset (``step_size``, ``inverse_mass``, ``n_steps``, ``beta``) is
    adapted by the warm-up :func:`~ladder_mcmc.sample` runs by default, as for
    :func:`~ladder_mcmc.lahmc` (the level-0 trajectory ``M ε`` by its ChEES criterion,
    ``β`` by MEADS's damping), and listed in
    :attr:`~ladder_mcmc.ladder.kernel.Ladder.adapt`; what is given is kept. The law's
    ``c``, ``w`` and levels are not adapted.

    Parameters
    ----------
    target : Target
    step_size : float, optional
        ``ε``, the step at levels ``ℓ ≤ 0`` (adapted: a first guess, then dual averaging
        of the first-rung probability; the family and the law take it together).
    n_steps : int, optional
        ``M``, the steps at level 0 (adapted from 8).
    beta : float in (0, 1], optional
        Momentum refresh per step (adapted from 1).
    scale, width, min_level, max_level
        ``c``, ``w``, ``ℓ_min``, ``ℓ_max``
        (:class:`~ladder_mcmc.hamiltonian.gradient_level.GradientLevelLaw`);
        ``min_level = 0`` gives the refined leapfrog alone.
    look_ahead : int
        ``K``.
    inverse_mass : array, optional
        Diagonal or dense inverse mass matrix (adapted: the chains' variances; the
        family, the law and the momentum refresh take it together). With ``step_size``
        given, the mass is not adapted (the identity, unless given too).

    Raises
    ------
    ValueError
        A value out of its range; ``min_level > max_level``.

    Examples
    --------
    >>> import numpy as np
    >>> from ladder_mcmc import sample
    >>> from ladder_mcmc.models import IllConditionedGaussian
    >>> target = IllConditionedGaussian(2, log_condition=1)
    >>> kernel = span_lahmc(target)
    >>> sorted(kernel.adapt)
    ['beta', 'inverse_mass', 'n_leapfrog', 'step_size']
    >>> init = target.sample(4, np.random.default_rng(0))
    >>> trace = sample(kernel, init, 20, seed=1, warmup=60)
    >>> trace.positions.shape, trace.warmup.adapted
    ((20, 4, 2), ('step_size', 'inverse_mass', 'n_leapfrog', 'beta'))
    """
    positive_int("look_ahead", look_ahead)
    step_size, metric, adapt = leapfrog_start(step_size, inverse_mass)
    adapt = set(adapt)
    if n_steps is None:
        adapt.add("n_leapfrog")
    if beta is None:
        adapt.add("beta")
    m = positive_int("n_steps", START_N_STEPS if n_steps is None else n_steps)
    b = STARTING_VALUES["beta"] if beta is None else beta
    law = GradientLevelLaw(step_size, scale, width, min_level, max_level, metric)
    family = SpanLeapfrog(target, step_size, metric, m)
    return auxiliary_lahmc(family, law, b, look_ahead, frozenset(adapt))
