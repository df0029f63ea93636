"""The host side of the loop compiled by JAX: its arguments and its outputs (private).

:mod:`ladder_mcmc.drivers._leapfrog_jax` runs blocks of steps in one compiled call;
these numpy functions make the call's metric and control arguments, hand its outputs
to the recorder, and put the chains' carried state back into a
:class:`~ladder_mcmc.ladder.kernel.LadderState`.
"""

from __future__ import annotations

import attrs
import numpy as np

from ladder_mcmc.drivers._leapfrog_origin import _assemble
from ladder_mcmc.drivers.step_control import StepSizeControl
from ladder_mcmc.ladder.kernel import LadderState


def metric_argument(inverse_mass, dim: int) -> tuple[str, np.ndarray]:
    """The compiled loop's kind of metric and its ``M⁻¹`` argument: ``"diagonal"`` for the
    identity too (a vector of ones: ``p · 1`` is ``p`` exactly, and warm-up's switch
    from the identity to an adapted diagonal mass does not compile again), or
    ``"dense"``."""
    if inverse_mass is None:
        return "diagonal", np.ones(dim)
    return ("diagonal" if np.ndim(inverse_mass) == 1 else "dense"), np.asarray(
        inverse_mass, dtype=np.float64
    )


def control_argument(kp, control: StepSizeControl | None, block: int) -> dict:
    """The compiled loop's ``control``: sub-blocks, dual averaging, and the starting
    ``ε`` and lengths (for sampling: one sub-block per call, no adaptation)."""
    centre, half = kp.lengths if kp.lengths is not None else (kp.n_leapfrog, 0)
    c = control
    f64 = np.float64
    dual = {
        "eps": f64(kp.eps),
        "centre": np.int64(centre),
        "half": np.int64(half),
        "t": np.int64(0 if c is None else c.t),
        "h_bar": f64(0.0 if c is None else c.h_bar),
        "log_eps": f64(0.0 if c is None else c.log_eps),
        "log_eps_bar": f64(0.0 if c is None else c.log_eps_bar),
    }
    follow = c is not None and c.length_time is not None
    return {
        "every": np.int64(block if c is None else c.every),
        "adapt": np.bool_(c is not None),
        "target": f64(0.0 if c is None else c.target),
        "gamma": f64(1.0 if c is None else c.gamma),
        "t0": f64(0.0 if c is None else c.t0),
        "kappa": f64(0.0 if c is None else c.kappa),
        "mu": f64(0.0 if c is None else c.mu),
        "follow": np.bool_(follow),
        "time": f64(c.length_time if follow else 1.0),
        "max_n": np.int64(1 if c is None else c.max_n_leapfrog),
        "jitter": f64(0.0 if c is None else c.jitter),
        "dual": dual,
    }


def control_after(control: StepSizeControl, dual: dict) -> StepSizeControl:
    """``control`` with the dual-averaging state the compiled loop handed back."""
    return attrs.evolve(
        control,
        t=int(dual["t"]),
        h_bar=float(dual["h_bar"]),
        log_eps=float(dual["log_eps"]),
        log_eps_bar=float(dual["log_eps_bar"]),
    )


def final_state(state: dict, direction: np.ndarray, jittered: bool) -> LadderState:
    """The chains' kernel state from the compiled loop's carried state (each chain at the
    start of a step: its origin, the physical momentum refreshed, the flips counted)."""
    x0 = np.asarray(state["x0"])
    n, dim = x0.shape
    cx, cg, ce = slice(0, dim), slice(2 * dim, 3 * dim), 3 * dim
    rows = np.empty((n, 3 * dim + 3 + jittered))
    rows[:, cx], rows[:, dim : 2 * dim] = x0, -np.asarray(state["p0"])
    rows[:, cg], rows[:, ce], rows[:, ce + 1] = (
        np.asarray(state["g0"]),
        np.asarray(state["e0"]),
        np.asarray(state["lp0"]),
    )
    rows[:, ce + 2] = np.asarray(state["u"])
    if jittered:
        rows[:, ce + 3] = np.asarray(state["n"])
    signs = np.where(np.asarray(state["flips"]) % 2 == 1, -1, 1).astype(np.int8)
    return _assemble([(np.arange(n), rows, signs * direction)], dim)


def record_block(recorder, out, steps_done, limit, costs):
    """Hand the block's steps to the recorder, step by step of the block (chains within)."""
    draws, stats = np.asarray(out["draw"]), np.asarray(out["stats"])
    b = int(limit.max())
    if np.all(limit == b):  # the usual case: every chain took b steps
        chains = np.tile(np.arange(limit.size), b)
        steps = steps_done[chains] + np.repeat(np.arange(b), limit.size)
        draw = np.swapaxes(draws[:, :b], 0, 1).reshape(-1, draws.shape[2])
        stat = np.swapaxes(stats[:, :b], 0, 1).reshape(-1, 4)
    else:
        taken = np.arange(b)[:, None] < limit[None, :]  # (steps, chains)
        s_idx, chains = np.nonzero(taken)
        steps = steps_done[chains] + s_idx
        draw = np.swapaxes(draws[:, :b], 0, 1)[taken]
        stat = np.swapaxes(stats[:, :b], 0, 1)[taken]
    cost = stat[:, 3] if costs else None
    recorder.record(chains, steps, draw, stat[:, 0], stat[:, 1], stat[:, 2], cost)


__all__ = [
    "control_after",
    "control_argument",
    "final_state",
    "metric_argument",
    "record_block",
]
