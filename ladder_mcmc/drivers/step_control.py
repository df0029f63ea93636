"""Warm-up's step-size control, for a driver that runs it between blocks of steps itself.

Warm-up (:mod:`ladder_mcmc.run.adaptation`) runs the chains in blocks of ``every``
steps at one step size ``ε``. After each block it feeds each of the block's steps, in
step order, the fraction of chains that took the first rung to dual averaging of
``log ε`` (Hoffman & Gelman 2014, algorithm 5;
:class:`~ladder_mcmc.run.step_size.DualAveraging`): per step ``t ← t + 1``,
``η = 1/(t + t₀)``, ``h̄ ← (1 − η) h̄ + η (δ − a_t)``, ``log ε_t = μ − (√t/γ) h̄``,
``w = t^{−κ}``, ``log ε̄_t = w log ε_t + (1 − w) log ε̄_{t−1}``. The next block runs
at ``ε = exp(log ε_t)`` and, when the length follows the step (``length_time`` set),
``M = min(max(1, round(T / exp(log ε̄_t))), M_max)``, a length law's half-width
``⌊j (M − 1)⌋`` (docs/design.md §12).

A driver that can run a stretch of such blocks in one call
(:func:`~ladder_mcmc.drivers.contract.adapting_driver_for`: the loop compiled by JAX)
takes a :class:`StepSizeControl` and hands back the same with its dual-averaging state
advanced; warm-up calls any other driver block by block and updates in between, with
the same result.
"""

from __future__ import annotations

import attrs


@attrs.frozen
class StepSizeControl:
    """Dual averaging of ``log ε`` between blocks of ``every`` steps (see the module).

    ``target`` (``δ``), ``gamma``, ``t0``, ``kappa``, ``mu``: the constants;
    ``t``, ``h_bar``, ``log_eps``, ``log_eps_bar``: the state, after ``t`` updates.
    ``length_time``: ``T`` (same units as ``ε``), or None to keep ``M``;
    ``max_n_leapfrog``: ``M_max``; ``jitter``: ``j`` of the kernel's length law.
    """

    every: int
    target: float
    gamma: float
    t0: float
    kappa: float
    mu: float
    t: int
    h_bar: float
    log_eps: float
    log_eps_bar: float
    length_time: float | None = None
    max_n_leapfrog: int = 1
    jitter: float = 0.0


__all__ = ["StepSizeControl"]
