"""A step size jittered per chain and per step: the leapfrog ladder with an auxiliary scale.

A fixed leapfrog map ``L(ε, M)`` can resonate with the target: where ``εM`` is close
to a period of the (whitened) target's dynamics — half a period maps ``x`` to about
``−x``, a whole one back to ``x`` — every trajectory ends where it started, or at its
mirror image, and ``x²`` barely moves however long the chain runs
(``docs/how-to/posteriors.md``: the mixture posterior at ``β = 1``;
``benchmarks/results/against_nuts.md``: the resonant rows of the grids). Stan's remedy
is to draw the step size afresh each iteration, ``ε·s`` with ``s`` uniform on
``[1 − j, 1 + j]``.

On the ladder the step must be the same for every rung of one step (the rungs are the
orbit ``L ζ, L² ζ, …`` of one map), so ``s`` is carried in the state as an auxiliary
variable, one per chain:

* the extended target is ``p(x, v) · q(s) · ½`` with ``q`` uniform on ``[1 − j, 1 + j]``
  (``s`` independent of everything else);
* :class:`JitteredLeapfrog` is the leapfrog ``L(ε s, M)`` on ``(x, v)`` with ``s``
  unchanged: for each fixed ``s`` a deterministic, reversible (``F L F = L⁻¹``),
  volume-preserving map, so the ladder step keeps ``p(x, v | s) = p(x, v)`` for every
  ``s``, hence the extended target;
* :class:`StepSizeJitter` redraws ``s`` from ``q``, independently of the state: a Gibbs
  update of ``s``, which keeps the extended target too.

The ``x``-marginal is the target. ``s`` does not enter the log density, so redrawing it
needs no new energy evaluation. The initial state has ``s = 1``; the first refresh draws
it from ``q``. :func:`~ladder_mcmc.hamiltonian.samplers.lahmc` and
:func:`~ladder_mcmc.hamiltonian.samplers.hmc` build these kernels with ``jitter=j``;
warm-up adapts the centre ``ε``.
"""

from __future__ import annotations

from functools import partial

import attrs
import numpy as np

from ladder_mcmc.hamiltonian.leapfrog import Leapfrog, PhaseState
from ladder_mcmc.ladder.refresh import Refresh
from ladder_mcmc.validation import jitter_fraction, state_field


@attrs.frozen(eq=False)
class JitteredPhaseState(PhaseState):
    """A :class:`~ladder_mcmc.hamiltonian.leapfrog.PhaseState` with one step-size factor per chain.

    Attributes
    ----------
    step_scale : float array (chains,)
        ``s``: this chain's leapfrog step is ``ε s`` for the current ladder step.
        Uniform on ``[1 − j, 1 + j]`` and independent of ``(x, v, d)`` under the
        extended target.
    """

    step_scale: np.ndarray


@attrs.frozen(eq=False)
class JitteredLeapfrog(Leapfrog):
    """:class:`~.leapfrog.Leapfrog` with the step ``ε s``, ``s`` read from the state.

    The same map ``L(ε s, M)`` on ``(x, v)`` for each chain's ``s``, with ``s`` unchanged
    by ``forward``, ``move`` and ``flip``: reversible and volume preserving on the
    extended state exactly when the leapfrog is. ``log_density`` is the leapfrog's (the
    law of ``s`` does not depend on ``(x, v)``). ``prepare`` sets ``s = 1`` unless the
    initial state carries it. Use it with :class:`StepSizeJitter` in the refresh.

    Parameters
    ----------
    target, step_size, n_steps, metric
        As for :class:`~ladder_mcmc.hamiltonian.leapfrog.Leapfrog`; ``step_size`` is the
        centre ``ε``.
    """

    def advance(self, state: JitteredPhaseState, v: np.ndarray) -> PhaseState:
        """The leapfrog with each chain's own step ``ε s`` (``forward`` and ``move`` carry
        ``step_scale`` over unchanged)."""
        eps = self.step_size * state.step_scale[:, None]
        return self.leapfrog_steps(state.x, v, state.grad, eps)

    def prepare(self, init, rng: np.random.Generator) -> JitteredPhaseState:
        """As :meth:`Leapfrog.prepare`, plus ``step_scale`` (1 unless ``init`` has one).

        Raises
        ------
        ValueError
            As :meth:`Leapfrog.prepare`; or if ``init.step_scale`` is not a positive
            finite vector with one entry per chain.
        """
        scale = getattr(init, "step_scale", None)
        state = super().prepare(init, rng)
        n = state.x.shape[0]
        if scale is None:
            scale = np.ones(n)
        else:
            scale = np.asarray(scale, dtype=float)
            if scale.shape != (n,) or not np.all(np.isfinite(scale) & (scale > 0)):
                raise ValueError(
                    f"init.step_scale must be positive and finite with shape {(n,)}, "
                    f"got {init.step_scale!r}"
                )
        return JitteredPhaseState(state.x, state.v, state.energy, state.grad, scale)

    def describe(self) -> dict:
        return {**super().describe(), "map": "JitteredLeapfrog"}


@attrs.frozen
class StepSizeJitter(Refresh):
    """Redraw each chain's step-size factor ``s`` uniformly on ``[1 − j, 1 + j]``.

    A Gibbs update of the auxiliary ``s`` of :class:`JitteredLeapfrog`, independent of
    the state, so it keeps the extended target; ``s`` does not enter the log density.

    Parameters
    ----------
    jitter : float in (0, 1)
        ``j``, the half-width of the factor's range (Stan's ``stepsize_jitter``).

    Raises
    ------
    ValueError
        If ``jitter`` is not in (0, 1); at call time, a state without ``step_scale``
        (use :class:`JitteredLeapfrog`).

    Examples
    --------
    >>> import numpy as np
    >>> from ladder_mcmc import Ladder, LookAheadRule, MomentumRefresh, sample
    >>> from ladder_mcmc.hamiltonian import JitteredLeapfrog, StepSizeJitter
    >>> from ladder_mcmc.models import IllConditionedGaussian
    >>> target = IllConditionedGaussian(2, log_condition=1)
    >>> kernel = Ladder(
    ...     JitteredLeapfrog(target, 0.3, 10), LookAheadRule(4),
    ...     MomentumRefresh(1.0) + StepSizeJitter(0.5),
    ... )
    >>> trace = sample(kernel, np.zeros((4, 2)), 100, seed=0)
    >>> trace.positions.shape
    (100, 4, 2)
    """

    jitter: float = attrs.field(
        converter=partial(
            jitter_fraction,
            zero=False,
            one=False,
            why=(
                ": StepSizeJitter(0) never changes the step (s = 1 always); omit it "
                "(lahmc(..., jitter=0) adds none)"
            ),
        )
    )
    changes_state = False  # the step-size factor does not enter log p

    def __call__(self, state, direction, rng):
        scale = state_field(
            state, "step_scale", "StepSizeJitter", "JitteredLeapfrog's JitteredPhaseState"
        )
        fresh = 1.0 + self.jitter * (2.0 * rng.random(scale.shape[0]) - 1.0)
        return attrs.evolve(state, step_scale=fresh), direction

    def describe(self) -> dict:
        return {"refresh": "StepSizeJitter", "jitter": float(self.jitter)}


__all__ = ["JitteredLeapfrog", "JitteredPhaseState", "StepSizeJitter"]
