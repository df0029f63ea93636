"""One sampler run on one model, and what it cost: :class:`SamplerRun`, and
:func:`run_kernel`, which runs a kernel of this package.

A run is ``warmup`` steps of warm-up (the kernel's own adaptation, from its map; for a
kernel whose map adapts nothing, ``warmup`` steps of burn-in whose draws are dropped),
then ``draws`` kept steps per chain. Its cost is counted in gradient evaluations (all
chains; warm-up apart) and in seconds of the whole ``sample`` call with JAX's compile
time left out (:mod:`ladder_mcmc.bench.compile_time`; or by repeating the run with a warm
cache, :mod:`ladder_mcmc.bench.warm_cache`).
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from ladder_mcmc.bench.compile_time import CompileClock
from ladder_mcmc.engine.warmup import Warmup, adaptation_for
from ladder_mcmc.ladder.kernel import Ladder
from ladder_mcmc.run.sampling import sample

KernelFactory = Callable[[Any], Ladder]
"""``target -> kernel``: what the suite runs (:func:`~ladder_mcmc.lahmc` by default)."""

MAX_NOTES = 5  # distinct other warnings kept per run


@attrs.frozen(eq=False)
class SamplerRun:
    """What one run drew and cost.

    Attributes
    ----------
    positions : float array (draws, chains, dim)
        The kept draws, unconstrained.
    grad_evals : float
        Gradient evaluations of the sampling phase, summed over chains.
    warmup_grad_evals : float
        Gradient evaluations of the warm-up (or burn-in), summed over chains.
    wall_time : float
        Seconds of warm-up and sampling, JAX's compile time left out: the run's wall time
        less JAX's compile events; timed by
        :func:`~ladder_mcmc.bench.warm_cache.cold_and_warm`, those of its third, warm run.
    compile_time : float
        Seconds left out of ``wall_time``: JAX's compile events during the run; timed by
        ``cold_and_warm``, what the cold run took beyond ``wall_time``.
    sampling_time : float or None
        Seconds of the sampling phase alone, as the run reports it (compile included).
    step_size : float or None
        The step size after warm-up (the median over chains for NUTS); None if the
        kernel has none.
    warmup_warnings : tuple of str
        What the warm-up said went wrong (its adaptation's own check).
    notes : tuple of str
        Other warnings raised during the run (at most a few, each once).
    backend : str
        What ran the steps (``"numpy"``, ``"jax"``).
    interrupted : bool
        The run was cut short (Ctrl-C): ``positions`` holds what every chain drew so far,
        and nothing is to be judged.
    """

    positions: np.ndarray
    grad_evals: float
    warmup_grad_evals: float
    wall_time: float
    compile_time: float = 0.0
    sampling_time: float | None = None
    step_size: float | None = None
    warmup_warnings: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    backend: str = "numpy"
    interrupted: bool = False


def messages(caught: list[warnings.WarningMessage], limit: int = MAX_NOTES) -> tuple[str, ...]:
    """The distinct messages of ``caught``, in order, at most ``limit``."""
    out: list[str] = []
    for w in caught:
        text = f"{w.category.__name__}: {w.message}"
        if text not in out:
            out.append(text)
    return tuple(out[:limit])


def warmup_problems(kernel: Ladder, init: Any, warmup: int, found: Any) -> tuple[str, ...]:
    """What the warm-up of ``kernel`` says of its result ``found`` (``trace.warmup``): the
    messages of its adaptation's own check (a collapsed step size, most of its last steps
    flipping); empty for no warm-up."""
    if found is None or warmup == 0:
        return ()
    adaptation = adaptation_for(kernel, Warmup(warmup), init, False)
    if adaptation is None:
        return ()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        adaptation.check(found)
    return messages(caught, limit=len(caught))


def _step_size(kernel: Ladder, found: Any) -> float | None:
    value = getattr(found, "step_size", None)
    if value is None:
        value = getattr(kernel.map, "step_size", None)
    try:
        value = float(np.median(np.asarray(value, dtype=float)))
    except (TypeError, ValueError):
        return None
    return value if np.isfinite(value) else None


def _switched(trace: Any) -> tuple[str, ...]:
    """The switch's decision as a note, if it switched."""
    record = getattr(trace, "switch", None) or {}
    return (record["reason"],) if record.get("switched") else ()


def run_kernel(
    kernel: Ladder,
    init: np.ndarray,
    *,
    warmup: int,
    draws: int,
    seed: np.random.SeedSequence,
    backend: str | None = None,
    switch: Any = None,
) -> SamplerRun:
    """Run ``kernel`` from ``init`` (chains, dim): ``warmup`` steps of warm-up, then
    ``draws`` kept steps per chain (``sample(..., checks=False)``, no progress bar), with
    ``Warmup(switch=switch)`` (what ``sample(target)`` sets for the default kernel).

    A kernel whose map has no adaptation (``map.adaptation``, e.g. a map of one's own)
    runs ``warmup`` steps of burn-in instead, continued from their last state; their
    gradients count as the warm-up's.

    A call draws the same as the last one with the same arguments (``seed`` is not
    advanced). ``sample`` returns what it drew when Ctrl-C cuts it short: the run is then marked
    ``interrupted`` (a burn-in cut short is not followed by sampling).
    """
    burn_seed, run_seed = copy.deepcopy(seed).spawn(2)  # the same children at every call
    adapts = getattr(kernel.map, "adaptation", None) is not None
    common = {"backend": backend, "checks": False, "progress": False}
    burn_grads, start = 0.0, init
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with CompileClock() as clock:
            if warmup and not adapts:
                burn = sample(kernel, init, warmup, seed=burn_seed, warmup=0, **common)
                burn_grads, start = float(np.sum(burn.grad_evals)), burn.final
            if warmup and not adapts and burn.interrupted:
                trace = burn  # no sampling after a burn-in cut short
            else:
                steps = warmup if adapts else 0
                settings = steps if switch is None else Warmup(steps, switch=switch)
                trace = sample(kernel, start, draws, seed=run_seed, warmup=settings, **common)
    found = trace.warmup
    warm_grads = burn_grads + (0.0 if found is None else float(np.sum(found.grad_evals)))
    return SamplerRun(
        positions=np.asarray(trace.positions, dtype=float),
        grad_evals=float(np.sum(trace.grad_evals)),
        warmup_grad_evals=warm_grads,
        wall_time=clock.net,
        compile_time=clock.compile,
        sampling_time=float(trace.wall_time),
        step_size=_step_size(kernel, found),
        warmup_warnings=warmup_problems(kernel, init, warmup if adapts else 0, found),
        notes=messages(caught) + _switched(trace),
        backend=str(trace.backend.get("name", "")),
        interrupted=bool(trace.interrupted),
    )


__all__ = ["KernelFactory", "SamplerRun", "messages", "run_kernel", "warmup_problems"]
