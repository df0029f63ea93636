"""The record of a run: draws, per-step ladder statistics, bookkeeping."""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from ladder_mcmc.engine.recording import gradients

#: an energy error (``log p(ζ) − log p(rung)``, nats) above which a step counts as
#: diverging (:attr:`Trace.diverging`): Stan's threshold
DIVERGENCE = 1000.0


@attrs.frozen(eq=False)
class Trace:
    """The result of :func:`ladder_mcmc.sample`.

    Attributes
    ----------
    states : State
        Recorded draws, leaves shaped (n_kept, chains, ...): what ``map.draw``
        returns after each kept step (positions for leapfrog).
    rungs : int array (n_steps, chains)
        The rung each step took: ``a ≥ 1`` rung ``L^a``, ``0`` flip, ``-1`` stay
        (int8, or the wider type ``max_rung`` needs: :func:`rung_dtype`).
    n_moves : int array (n_steps, chains)
        Map applications per step.
    non_finite_rungs : int array (n_steps, chains)
        Rungs per step whose density was not finite.
    cost : int or int array (chains,)
        Gradient evaluations per map application (per chain if groups of
        chains run through an executor adapted different leapfrog step counts);
        for a map whose cost varies per chain and step, its fixed ``map.cost``, and
        ``step_cost`` holds the counts.
    max_rung : int
        ``K``; ``rung_counts`` has length ``K + 1``.
    thin : int
        Draws were kept every ``thin`` steps.
    final : LadderState
        Kernel state after the last completed step (to continue the run).
    interrupted : bool
        True if the run was stopped (Ctrl-C) before ``n_steps``.
    wall_time : float
        Seconds spent sampling.
    kernel : dict
        Description of the kernel (after warm-up adaptation, the adapted one).
        Groups of chains run through an executor whose adapted kernels differ:
        the entries they share, and each group's description under ``"groups"``.
    warmup : WarmupResult, GroupedWarmup or None
        Adapted step size and mass matrix, and the warm-up's own gradient
        evaluations (counted as ``grad_evals`` is, not included in it), when ``warmup > 0``;
        a :class:`~ladder_mcmc.hamiltonian.warmup.result.GroupedWarmup` (the same attributes,
        per group) for several groups of chains run through an executor.
    step_cost : int array (n_steps, chains) or None
        Gradient evaluations per map application of every step, for a map whose cost
        varies per chain and step (``map.cost_of``: a jittered trajectory length); then
        ``grad_evals_per_step`` is ``n_moves * step_cost``. ``None`` otherwise.
    step_overhead : int array (n_steps, chains) or None
        Gradient evaluations of every step outside its map applications, for a kernel
        that declares them (``StepInfo.overhead``): those its refresh reports (an
        auxiliary law's redraw, ``Refresh.with_cost``) and the log density at the
        refreshed state (``map.log_density_cost``); ``grad_evals_per_step`` adds them.
        ``None`` otherwise (no such cost).
    parameters : ParameterSpace or None
        The target's names, shapes and constraining transform (its ``parameters``),
        used by :meth:`named_draws`, ``summary`` and ``to_inference_data``.
    backend : dict
        What ran the steps and why: ``{"name": "numpy" | "jax", "reason": ...}``
        (:mod:`ladder_mcmc.engine.backend`).
    step_stats : dict of arrays (n_steps, chains)
        More figures per step: ``energy`` (``−log p`` of the state after the step and its
        refresh: for leapfrog the Hamiltonian, what ``az.plot_energy`` and E-BFMI read),
        ``acceptance_rate`` (``C_0``, the first rung's probability) and ``energy_error``
        (the step's largest ``log p(ζ) − log p(rung)``; ``inf`` for a rung of density
        zero). See :attr:`diverging`.
    switch : dict or None
        What ``sample``'s ``switch`` decided after warm-up (:mod:`ladder_mcmc.run.switching`):
        ``switched``, ``reason``, the kernel switched ``to`` and the statistic read; None
        for a run without one.
    """

    states: Any
    rungs: np.ndarray
    n_moves: np.ndarray
    non_finite_rungs: np.ndarray
    cost: int
    max_rung: int
    thin: int = 1
    final: Any = None
    interrupted: bool = False
    wall_time: float = 0.0
    kernel: dict = attrs.field(factory=dict)
    warmup: Any = None
    step_cost: np.ndarray | None = None
    parameters: Any = None
    step_overhead: np.ndarray | None = None
    backend: dict = attrs.field(factory=dict)
    step_stats: dict = attrs.field(factory=dict)
    switch: dict | None = None

    @property
    def n_steps(self) -> int:
        return int(self.rungs.shape[0])

    @property
    def n_chains(self) -> int:
        return int(self.rungs.shape[1])

    @property
    def positions(self) -> np.ndarray:
        """Positions (n_kept, chains, dim), for kernels whose draws are positions."""
        if not isinstance(self.states, np.ndarray) or self.states.ndim != 3:
            raise AttributeError("this trace's draws are not positions (steps, chains, dim)")
        return self.states

    def named_draws(self) -> dict[str, np.ndarray]:
        """The draws as the model's variables: ``{name: array (n_kept, chains, *shape)}``,
        constrained (the target's ``parameters``); without names, ``{"x": positions}``."""
        x = self.positions
        if self.parameters is None:
            return {"x": x}
        return self.parameters.split(self.parameters.constrain(x))

    @property
    def rung_counts(self) -> np.ndarray:
        """Steps that took each rung, length ``K + 1``; index 0 = flip."""
        r = self.rungs[self.rungs >= 0].astype(np.int64)
        return np.bincount(r, minlength=self.max_rung + 1)[: self.max_rung + 1]

    @property
    def stay_count(self) -> int:
        """Steps that stayed put (rules with a "stay" outcome)."""
        return int((self.rungs == -1).sum())

    def transition_fractions(self) -> dict[str, float]:
        """Fraction of transitions to each target state: ``{"F": …, "L1": …, …}``.

        The paper's table 1 columns; ``"stay"`` is added for rules that can stay.
        NaN for a trace without steps (interrupted before the first).
        """
        total = self.rungs.size if self.rungs.size else np.nan
        counts = self.rung_counts
        out = {"F": counts[0] / total}
        out.update({f"L{a}": counts[a] / total for a in range(1, self.max_rung + 1)})
        if self.stay_count:
            out["stay"] = self.stay_count / total
        return {k: float(v) for k, v in out.items()}

    @property
    def grad_evals_per_step(self) -> np.ndarray:
        """Gradient evaluations per step and chain, (n_steps, chains):
        ``n_moves * cost`` (``n_moves * step_cost``), ``+ step_overhead``."""
        per_move = self.cost if self.step_cost is None else self.step_cost
        return gradients(self.n_moves, per_move, self.step_overhead)

    @property
    def grad_evals(self) -> np.ndarray:
        """Gradient evaluations computed per chain in the sampling steps, (chains,).

        Every gradient of the steps: map applications and rung densities, and what the
        kernel declares outside them (:attr:`step_overhead`). Not included: the warm-up's
        (``warmup.grad_evals``) and the preparation of the initial state before it
        (``Ladder.init``: one gradient per chain for a leapfrog; for an auxiliary law
        also its draw and its density there).
        """
        return self.grad_evals_per_step.sum(axis=0)

    @property
    def diverging(self) -> np.ndarray:
        """Bool (n_steps, chains): the steps that met a rung of density zero (a non-finite
        energy, counted in :attr:`non_finite_rungs`) or an energy error above
        :data:`DIVERGENCE` (Stan's threshold for a divergent trajectory)."""
        out = self.non_finite_rungs > 0
        error = self.step_stats.get("energy_error")
        if error is not None:
            with np.errstate(invalid="ignore"):
                out = out | (error > DIVERGENCE)
        return out

    @property
    def non_finite(self) -> int:
        """Total rungs whose density was not finite (counted as density zero)."""
        return int(self.non_finite_rungs.sum())
