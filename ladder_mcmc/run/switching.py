"""A run that may change its kernel after warm-up: ``Warmup(switch=...)``.

After warm-up, the run takes its first ``switch.probe_steps`` steps (the *probe*), and
``switch.decide(kernel, positions, warm)`` reads their draws: it returns ``None`` to keep
the (adapted) kernel, or another kernel. Kept, the run simply goes on — the probe's
steps are its first steps, on the same per-chain streams, so the trace is the one the
run gives without a switch (on numpy bit for bit; on JAX to rounding, the probe being
one more compiled block). Switched, the new kernel is warmed up from the chains' last
positions (the same warm-up settings) and runs all ``n_steps``; every gradient spent
before it (the first warm-up and the probe) is counted in ``trace.warmup.grad_evals``.
``trace.switch`` records the decision and its reason (:func:`ladder_mcmc.summary` prints
it). The switch protocol: :class:`KernelSwitch`; ``sample(target)``'s is
:class:`~ladder_mcmc.hamiltonian.geometry.GeometrySwitch`.
"""

from __future__ import annotations

import time
from typing import Any, Protocol

import attrs
import numpy as np

from ladder_mcmc.engine.contract import driver_for
from ladder_mcmc.engine.recording import gradients
from ladder_mcmc.ladder.kernel import Ladder
from ladder_mcmc.run.execution import Run, execute, trace_of


class KernelSwitch(Protocol):
    """What ``sample``'s ``switch`` provides."""

    #: steps after warm-up whose draws :meth:`decide` reads
    probe_steps: int
    #: gradients :meth:`decide` evaluates per draw it reads (counted as warm-up's)
    gradients_per_draw: int

    def decide(self, kernel: Ladder, positions: np.ndarray, warm: Any) -> tuple[Any, dict]:
        """``(new kernel or None, record)``: ``positions`` (probe_steps, chains, …) are the
        probe's draws, ``warm`` the warm-up's result; the record is JSON-like, with at least
        ``switched`` (bool) and ``reason`` (str)."""


def not_checked(reason: str) -> dict:
    """The record of a run whose switch was not consulted, and why."""
    return {"checked": False, "switched": False, "to": None, "reason": f"not checked: {reason}"}


def probe_length(run: Run, switch: Any) -> int:
    """The probe's steps: ``switch.probe_steps``, up to a whole number of kept draws."""
    thin = run.recorder.thin
    return -(-switch.probe_steps // thin) * thin


def why_not(run: Run, switch: Any) -> str | None:
    """Why ``switch`` cannot be consulted on ``run`` (None if it can)."""
    rec = run.recorder
    if run.warm is None:
        return "no warm-up"
    if run.checkpoint is not None or run.draws_file is not None:
        return "a run with a checkpoint or a draws file keeps its kernel"
    probe = probe_length(run, switch)
    if rec.n_steps <= probe:
        return f"n_steps={rec.n_steps} is not more than the probe's {probe} steps"
    return None


def run_switching(run: Run, switch: Any, restart: Any) -> tuple[Run, dict, bool]:
    """The probe on ``run`` (warmed up), then the decision: ``(run, record, interrupted)``,
    the run to finish (``run`` itself, or the new run ``restart(kernel, positions)``
    returns with whether its warm-up was interrupted) and ``trace.switch``'s record. An
    interrupted probe, check or restart: ``run`` with its probe's steps so far,
    interrupted."""
    rec = run.recorder
    probe = probe_length(run, switch)
    driver = driver_for(
        run.kernel, run.schedule, run.backend.name, run.backend.chains, run.backend.threads
    )
    start = time.perf_counter()
    try:
        run.ks = driver(run.kernel, run.ks, rec, run.streams, None, until=probe)
    except KeyboardInterrupt:
        return run, not_checked("interrupted in the probe"), True
    finally:
        run.wall_time += time.perf_counter() - start  # the probe's steps are the run's
    positions = np.asarray(rec.draws[: probe // rec.thin])
    try:
        new, record = switch.decide(run.kernel, positions, run.warm)
    except KeyboardInterrupt:
        return run, not_checked("interrupted in the check"), True
    read = switch.gradients_per_draw * (probe // rec.thin)
    if read and hasattr(run.warm, "grad_evals"):
        run.warm = attrs.evolve(run.warm, grad_evals=run.warm.grad_evals + read)
    if new is None:
        return run, record, False
    cost = run.kernel.map.cost if rec.step_cost is None else rec.step_cost[:probe]
    overhead = None if rec.step_overhead is None else rec.step_overhead[:probe]
    spent = np.sum(gradients(rec.n_moves[:probe], cost, overhead), axis=0)
    spent = spent + np.asarray(run.warm.grad_evals)
    try:  # the new kernel from the chains' last draws (positions, for a leapfrog)
        follow, interrupted = restart(new, run.kernel.map.draw(run.ks.state))
    except KeyboardInterrupt:
        return run, {**record, "reason": record["reason"] + " (interrupted before it ran)"}, True
    if follow.warm is not None and hasattr(follow.warm, "grad_evals"):
        follow.warm = attrs.evolve(follow.warm, grad_evals=follow.warm.grad_evals + spent)
    return follow, record, interrupted


def finish(run: Run, record: dict | None, progress: bool, interrupted: bool = False) -> Any:
    """Execute what is left of ``run`` (nothing if ``interrupted``); its trace with
    ``switch=record``."""
    if interrupted:
        trace = trace_of(run, None if run.recorder.completed() else run.ks, interrupted=True)
    else:
        trace = execute(run, progress)
    return trace if record is None else attrs.evolve(trace, switch=record)


__all__ = ["KernelSwitch", "finish", "not_checked", "probe_length", "run_switching", "why_not"]
