"""A cap on the warm-up's step from the law's level-0 probe (``refined_lahmc``).

The refined leapfrog's law (:class:`~ladder_mcmc.hamiltonian.refined_step.RefinementLaw`)
removes the energy error's rejections: where a step is too coarse it refines it. Dual
averaging of the first-rung fraction then meets only the law's own rejections, rungs of
density zero (a rung whose level-0 probe fails, reached at level 0), and raises ``ε``
until they are about ``1 − target_prob`` of the first rungs.

:class:`ProbeCappedAdaptation` keeps :class:`~.adaptation.HMCAdaptation` and caps its
step: at the start and at each window's end (host), the cap is the largest ``ε`` on a
grid of ratio :data:`GRID` at which the level-0 probe is accurate (``e_0 ≤ δ``) at all of
:data:`PROBES` pairs of a chain's state and fresh momenta; at the chains' states a level-0
probe then fails with a probability of about ``1/PROBES`` or less, and a rung of density
zero is rarer still. Dual averaging runs below the cap (``update`` clamps its iterate
and average, pure, on either backend). Only warm-up's values change; the law does not.
"""

from __future__ import annotations

import math
from typing import Any

import attrs
import numpy as np

from ladder_mcmc.arrays import namespace
from ladder_mcmc.hamiltonian.warmup import moments  # noqa: F401  (annotations, as below)
from ladder_mcmc.hamiltonian.warmup.adaptation import HMCAdaptation, HMCWarmupState
from ladder_mcmc.hamiltonian.warmup.dual_averaging import (  # noqa: F401
    MAX_STEP_SIZE,
    MIN_STEP_SIZE,
    DualAveragingState,  # the inherited fields' annotation, resolved here by the API docs
)
from ladder_mcmc.hamiltonian.warmup.parameters import restart_chains, with_hmc_parameters
from ladder_mcmc.ladder import batch

#: level-0 probes (fresh momenta, over all chains) that must all be accurate
PROBES = 256
#: the cap's grid: ``ε`` searched in steps of this ratio
GRID = 2.0**0.25


def accurate_step(law: Any, inner: Any, start: float, rng: Any) -> tuple[float, np.ndarray]:
    """The largest ``ε = start · GRID^k`` at which ``law``'s level-0 probe is accurate at
    all of :data:`PROBES` copies of the chains' states ``inner`` with fresh momenta (the
    same momenta at every ``ε``), and the gradients per chain the probes spent.

    Doubled or halved until the answer changes, then bisected down to :data:`GRID`.
    """
    n = batch.n_chains(inner)
    copies = math.ceil(PROBES / n)
    state = batch.take(inner, np.tile(np.arange(n), copies))
    shape = (n, np.shape(inner.v)[-1])
    momenta = [np.asarray(law.metric.sample_momentum(rng, shape)) for _ in range(copies)]
    state = attrs.evolve(state, v=np.concatenate(momenta))
    calls = 0

    def accurate(log_eps: float) -> bool:
        nonlocal calls
        calls += 1
        eps = min(max(math.exp(log_eps), MIN_STEP_SIZE), MAX_STEP_SIZE)
        error = attrs.evolve(law, step_size=eps).probe_error(state, 0)
        return bool(np.all(error <= law.threshold))

    unit, width = math.log(GRID), 4  # a doubling: four grid steps
    lo = math.log(start)
    up = accurate(lo)
    hi = lo + (width if up else -width) * unit
    for _ in range(64):  # bracket: [lo, hi] with lo accurate, hi not
        if math.exp(hi) >= MAX_STEP_SIZE or math.exp(hi) <= MIN_STEP_SIZE:
            break
        if accurate(hi) != up:
            break
        lo, hi = hi, hi + (hi - lo)
    if not up:
        lo, hi = hi, lo
    while abs(hi - lo) > 1.5 * unit:  # bisect on the grid
        mid = lo + round((hi - lo) / unit / 2) * unit
        lo, hi = (mid, hi) if accurate(mid) else (lo, mid)
    cap = min(max(math.exp(lo), MIN_STEP_SIZE), MAX_STEP_SIZE)
    spent = calls * 2 * int(law.probe_steps) * copies
    return cap, np.full(n, spent, dtype=np.int64)


@attrs.frozen(eq=False)
class ProbeCappedState(HMCWarmupState):
    """:class:`~.adaptation.HMCWarmupState` and ``cap``, the step's cap (float64)."""

    cap: Any


@attrs.frozen
class ProbeCappedAdaptation(HMCAdaptation):
    """:class:`~.adaptation.HMCAdaptation` with the step below the law's probe cap
    (module docstring), for a map whose law has ``probe_error``, ``threshold``,
    ``probe_steps`` and ``metric``."""

    def begin(self, kernel, ks, rng):
        """As the parent's, then the cap at the chains' first states."""
        kernel, ks, state, grads = super().begin(kernel, ks, rng)
        fields = {f.name: getattr(state, f.name) for f in attrs.fields(HMCWarmupState)}
        state = ProbeCappedState(**fields, cap=np.float64(np.inf))
        kernel, ks, state, spent = self._cap(kernel, ks, state, rng)
        return kernel, ks, state, grads + spent

    def update(self, state, rungs, draws, first, valid):
        """As the parent's, with the iterate, its average and the step at most the cap."""
        state = super().update(state, rungs, draws, first, valid)
        return self._clamped(state)

    def window_end(self, kernel, ks, state, rng):
        """As the parent's, then a new cap at the new mass and the chains' states."""
        kernel, ks, state = super().window_end(kernel, ks, state, rng)
        kernel, ks, state, spent = self._cap(kernel, ks, state, rng)
        return kernel, ks, attrs.evolve(state, spent=np.asarray(state.spent) + spent)

    def _clamped(self, state: ProbeCappedState) -> ProbeCappedState:
        xp = namespace(state.step_size, state.cap)
        log_cap = xp.log(state.cap)
        dual = attrs.evolve(
            state.dual,
            log_eps=xp.minimum(state.dual.log_eps, log_cap),
            log_eps_bar=xp.minimum(state.dual.log_eps_bar, log_cap),
        )
        n_leapfrog = state.n_leapfrog
        final = xp.exp(dual.log_eps_bar)
        if self.trajectory_length is not None:
            n_leapfrog = self._clip(xp.round(self.trajectory_length / final), xp)
        elif "n_leapfrog" in self.adapted:
            n_leapfrog = self._clip(xp.round(state.time / final), xp)
        step = xp.minimum(state.step_size, state.cap)
        return attrs.evolve(state, dual=dual, step_size=step, n_leapfrog=n_leapfrog)

    def _cap(self, kernel, ks, state, rng):
        """The cap at the kernel's law and the chains' states (host); the step lowered to
        it, and ``α`` redrawn, if above. Returns the gradients per chain spent too."""
        spent = np.zeros(self.n_chains, dtype=np.int64)
        if "step_size" not in self.adapted:
            return kernel, ks, state, spent
        step = float(state.step_size)
        cap, spent = accurate_step(kernel.map.law, ks.state.inner, step, rng)
        state = self._clamped(attrs.evolve(state, cap=np.float64(cap)))
        if step > cap:
            kernel = with_hmc_parameters(kernel, step_size=cap)
            kernel, state = self._refit(kernel, state)
            ks, calls = restart_chains(kernel, ks, rng, momentum=False)
            spent = spent + calls
        return kernel, ks, state, spent


__all__ = ["GRID", "PROBES", "ProbeCappedAdaptation", "ProbeCappedState", "accurate_step"]
