"""Warm-up, written once: a kernel's adaptation run on either backend's loop.

What a warm-up adapts, and how, is the kernel's (an :class:`Adaptation`, which the map
provides: :meth:`ReversibleMap.adaptation <ladder_mcmc.ladder.maps.ReversibleMap.adaptation>`;
the Hamiltonian kernels' is :class:`~ladder_mcmc.hamiltonian.warmup.adaptation.HMCAdaptation`).
It is made of pure pieces:

* ``begin`` (host, once): first values (a first step size), the adaptation's state;
* ``kernel(kernel, state)``: the kernel at the state's current values;
* ``update(state, rungs, draws, first, valid)``: once every chain has finished a
  *sub-block* of ``every`` steps, its rung codes and draws fed to the state (dual
  averaging of the step size, a window's moments), one step at a time; sub-block ``b``
  runs at the state after sub-block ``b − 2`` (a segment's first two at its first
  state), so that a chain waits for the others only when a whole sub-block ahead;
* ``window_end`` (host, at the ends of the schedule's segments that close a window): new
  mass, length and refresh, fresh momenta;
* ``final`` (host): the adapted kernel and what warm-up found.

:func:`run_warmup` runs the schedule's segments. On numpy each sub-block is one call of
the host loop, and ``update`` runs on the host; on JAX a segment runs on the compiled
sampling loop with the adaptation in it (:func:`~ladder_mcmc.engine.jax_loop.run_adapting`):
a few calls, each one ``lax.while_loop`` in which the chains stay ragged across
sub-blocks (each at its sub-block's kernel, the adapted values traced) and ``update``
runs as the slowest chain finishes a sub-block, so the chains meet only at the windows'
ends. Both backends
draw the same numbers and run the same ``update`` at the same steps: their warm-ups
agree to rounding.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol

import attrs
import numpy as np

from ladder_mcmc.engine.contract import driver_for
from ladder_mcmc.engine.recording import StepRecorder, gradients
from ladder_mcmc.engine.streams import ChainStreams
from ladder_mcmc.ladder.kernel import Ladder, LadderState, density_cost, quiet_log_density_of
from ladder_mcmc.validation import attrs_converter, boolean, positive_finite, positive_int


def _as_steps(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ValueError(f"warmup steps must be a non-negative integer, got {value!r}")
    return int(value)


def _as_target_prob(value: Any) -> float:
    try:
        ok = not isinstance(value, (bool, str)) and 0 < float(value) < 1
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ValueError(f"target_prob must be a number in (0, 1), got {value!r}")
    return float(value)


def _as_length(value: Any) -> float | None:
    return None if value is None else positive_finite("trajectory_length", value)


def _as_switch(value: Any) -> Any:
    if value is None or (isinstance(value, str) and value == "auto"):
        return value
    if not callable(getattr(value, "decide", None)):
        raise ValueError(
            "switch must be 'auto', None or have probe_steps, gradients_per_draw and "
            f"decide(kernel, positions, warm), got {value!r}"
        )
    positive_int("switch.probe_steps", getattr(value, "probe_steps", None))
    positive_int("switch.gradients_per_draw", getattr(value, "gradients_per_draw", None), 0)
    return value


@attrs.frozen
class Warmup:
    """What a warm-up should do: the settings ``sample`` passes to a kernel's adaptation.

    Parameters
    ----------
    steps : int, optional
        Warm-up steps; ``None``: the adaptation's default (1000 for a kernel that leaves
        something to adapt, else none); ``0``: none.
    target_prob : float in (0, 1)
        Target mean probability of taking the first rung (dual averaging of ``ε``).
    adapt_mass : bool
        Adapt the inverse mass, if the kernel leaves it unset.
    dense_mass : bool
        A dense (rather than diagonal) inverse mass.
    trajectory_length : float, optional
        ``T``: instead of adapting the leapfrog steps per rung, keep ``M = round(T / ε)``.
    switch : "auto", None or a KernelSwitch
        After warm-up, a probe of the first draws that keeps the kernel or switches to
        another (:mod:`ladder_mcmc.run.switching`; recorded in ``trace.switch``).
        ``"auto"`` (default): ``sample(target)`` checks the default kernel's geometry
        (:class:`~ladder_mcmc.hamiltonian.geometry.GeometrySwitch`), a kernel you pass
        runs as it is; ``None``: never.
    """

    steps: int | None = attrs.field(default=None, converter=_as_steps)
    target_prob: float = attrs.field(default=0.8, converter=_as_target_prob)
    adapt_mass: bool = attrs.field(default=True, converter=attrs_converter(boolean, "adapt_mass"))
    dense_mass: bool = attrs.field(default=False, converter=attrs_converter(boolean, "dense_mass"))
    trajectory_length: float | None = attrs.field(default=None, converter=_as_length)
    switch: Any = attrs.field(default="auto", converter=_as_switch)


class Adaptation(Protocol):
    """How a warm-up adapts a kernel (see the module docstring); a frozen, hashable object
    (it is a constant of the compiled warm-up)."""

    #: warm-up steps
    n_warmup: int
    #: steps per sub-block: the kernel is fixed within one, ``update`` runs after it
    #: (sub-block ``b`` runs at the state after sub-block ``b − 2``)
    every: int
    #: whether ``update`` reads the draws (else it is passed ``None`` for them)
    keeps_draws: bool

    def begin(
        self, kernel: Ladder, ks: LadderState, rng: Any
    ) -> tuple[Ladder, LadderState, Any, np.ndarray]:
        """``(kernel, ks, state, gradients per chain spent)`` before the first step."""

    def segments(self) -> list[tuple[int, bool]]:
        """The schedule: ``(stop, window_end)`` of each segment, in order."""

    def kernel(self, kernel: Ladder, state: Any) -> Ladder:
        """The kernel at the state's current values (also on traced values)."""

    def update(self, state: Any, rungs: Any, draws: Any, first: Any, valid: Any) -> Any:
        """The state after a sub-block: ``rungs`` (rows, chains) and ``draws`` (rows, chains,
        …) of its steps, the first of them warm-up step ``first``; rows ``≥ valid`` are
        padding."""

    def window_end(
        self, kernel: Ladder, ks: LadderState, state: Any, rng: Any
    ) -> tuple[Ladder, LadderState, Any]:
        """At the end of a segment that closes a window (host)."""

    def final(self, kernel: Ladder, state: Any, record: WarmupRecord) -> tuple[Ladder, Any]:
        """The adapted kernel (nothing left to adapt) and what warm-up found."""

    def check(self, found: Any) -> None:
        """Warn of a warm-up that went bad (``found``: ``final``'s, or a grouped one), with
        ``stacklevel=ladder_mcmc.validation.user_stacklevel()`` (the user's line)."""


def adaptation_for(kernel: Ladder, settings: Warmup, init: Any, checks: bool) -> Any:
    """The adaptation ``settings`` ask for on ``kernel``, from the kernel's map
    (:meth:`~ladder_mcmc.ladder.maps.ReversibleMap.adaptation`), or ``None`` for no
    warm-up.

    Raises
    ------
    ValueError
        Warm-up steps asked for a map that declares no adaptation; what the map's
        adaptation refuses.
    """
    hook = getattr(kernel.map, "adaptation", None)
    adaptation = None if hook is None else hook(kernel, settings, init, checks)
    if adaptation is None and hook is None and settings.steps:
        raise ValueError(
            f"warmup={settings.steps}: warm-up adaptation needs a leapfrog-like map with "
            f"step_size and metric (a map with an adaptation); got {type(kernel.map).__name__}"
        )
    return adaptation


@attrs.frozen(eq=False)
class WarmupRecord:
    """Every warm-up step's statistics, per chain: ``rungs`` and ``grad_evals`` (steps,
    chains), gradients spent before the first step (``begin_grads``, per chain), and the
    wall time so far."""

    rungs: np.ndarray
    grad_evals: np.ndarray
    begin_grads: np.ndarray
    started: float

    @property
    def wall_time(self) -> float:
        return time.perf_counter() - self.started


def run_warmup(
    kernel: Ladder,
    ks: LadderState,
    adaptation: Adaptation,
    n_warmup: int,
    streams: ChainStreams,
    *,
    recorder: Callable[..., StepRecorder],
    schedule: str = "ragged",
    backend: str = "numpy",
    on_progress: Callable[[int], None] | None = None,
) -> tuple[Ladder, LadderState, Any]:
    """Run ``n_warmup`` steps of ``adaptation`` on the chains ``ks`` (module docstring).

    ``recorder(n_steps, n_chains, thin, max_rung=...)`` makes the
    :class:`~ladder_mcmc.engine.recording.StepRecorder` the host loop writes a segment into.

    Returns the adapted kernel, the chains' state after warm-up, and what the adaptation
    found (``final``'s second value). On ``KeyboardInterrupt`` the exception propagates
    with the chains' state so far in its ``state`` attribute (a :class:`LadderState`).
    """
    n_warmup = positive_int("warmup", n_warmup)
    started = time.perf_counter()
    n_chains = len(ks.direction)
    rng = streams.view()
    kernel, ks, state, begin_grads = adaptation.begin(kernel, ks, rng)
    rungs = np.zeros((n_warmup, n_chains), dtype=np.int64)
    grads = np.zeros((n_warmup, n_chains), dtype=np.int64)
    t = 0
    try:
        for stop, window_end in adaptation.segments():
            size = stop - t
            # the compiled loop's update reads the draws inside it: none kept on the host
            keep = adaptation.keeps_draws and backend != "jax"
            rec = recorder(size, n_chains, 1 if keep else size + 1, max_rung=kernel.max_rung)
            shown = None if on_progress is None else (lambda n, t=t: on_progress(t + n))
            if backend == "jax":
                from ladder_mcmc.engine.jax_loop import run_adapting

                ks, state = run_adapting(kernel, ks, rec, streams, adaptation, state, t, shown)
            else:
                driver = driver_for(kernel, schedule, "numpy")
                ks, state = _host_segment(
                    kernel, ks, rec, streams, adaptation, state, t, driver, shown
                )
            rungs[t:stop] = rec.rungs
            per_move = kernel.map.cost if rec.step_cost is None else rec.step_cost
            grads[t:stop] = gradients(rec.n_moves, per_move, rec.step_overhead)
            if window_end:
                kernel, ks, state = adaptation.window_end(kernel, ks, state, rng)
            t = stop
            if on_progress is not None:
                on_progress(t)
    except KeyboardInterrupt as err:
        err.state = ks  # type: ignore[attr-defined]
        raise
    record = WarmupRecord(rungs, grads, begin_grads, started)
    kernel, found = adaptation.final(adaptation.kernel(kernel, state), state, record)
    # the chains' log density under the adapted kernel (a density may depend on what was
    # adapted, e.g. a law of the step size): sampling starts from what it uses
    with np.errstate(all="ignore"):
        log_p, _ = quiet_log_density_of(kernel.map, ks.state)
    spent = density_cost(kernel.map, ks.state)
    ks = attrs.evolve(ks, log_density=log_p)
    if spent is not None and hasattr(found, "grad_evals"):
        found = attrs.evolve(found, grad_evals=found.grad_evals + spent)
    return kernel, ks, found


def _host_segment(kernel, ks, rec, streams, adaptation, state, first, driver, on_progress):
    """A segment's sub-blocks on the host loop (``driver``), each at the state after the one
    before the last, ``update`` after each; each step's cost per map call recorded."""
    lo, lagged = 0, state  # sub-block b runs at the state after sub-block b − 2
    while lo < rec.n_steps:
        hi = min(rec.n_steps, lo + adaptation.every)
        at = adaptation.kernel(kernel, lagged)
        ks = driver(at, ks, rec, streams, on_progress, until=hi)
        if at.map.cost_of is None:
            rec.costs()[lo:hi] = at.map.cost
        draws = None if rec.draws is None else np.asarray(rec.draws[lo:hi])
        lagged = state
        state = adaptation.update(state, rec.rungs[lo:hi], draws, first + lo, hi - lo)
        lo = hi
    return ks, state


__all__ = [
    "Adaptation",
    "Warmup",
    "WarmupRecord",
    "adaptation_for",
    "run_warmup",
]
