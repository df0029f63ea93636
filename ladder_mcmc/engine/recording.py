"""What a driver writes its steps into: the :class:`StepRecorder` interface.

Drivers depend on this interface only; :class:`ladder_mcmc.run.recorder.Recorder`
implements it (in memory, or with the draws in ``.npy`` files).
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np

__all__ = ["StepRecorder", "gradients"]


def gradients(n_moves: Any, cost: Any, overhead: Any = None) -> Any:
    """Gradient evaluations per step and chain (docs/design.md §6): map applications
    ``n_moves`` times their cost (the map's fixed ``cost``, or each step's), plus the
    step's ``overhead`` outside them (``None``: none). Numpy or JAX values."""
    out = n_moves.astype(np.int64) * cost
    return out if overhead is None else out + overhead


@runtime_checkable
class StepRecorder(Protocol):
    """The steps of a batch of chains: per-step statistics and the kept draws.

    Attributes
    ----------
    n_steps, n_chains, thin : int
        Steps per chain the run will record, chains, and the thinning of the draws
        (the draw of step ``s`` is kept when ``(s + 1) % thin == 0``).
    steps_done : int array (chains,)
        Steps each chain has recorded so far.
    rungs, n_moves, non_finite : int arrays (n_steps, chains)
        Rung codes, map applications and non-finite rungs of every recorded step.
    step_cost : int array (n_steps, chains) or None
        Gradient evaluations per map application of every recorded step, for a map
        whose cost varies per chain and step (``map.cost_of``): drivers pass it as
        ``cost`` with each step, for such maps only; ``None`` until then.
    step_overhead : int array (n_steps, chains) or None
        Gradient evaluations of every recorded step outside its map applications
        (``StepInfo.overhead``: a refresh that reports its cost, the log density at the
        refreshed state): drivers pass it as ``overhead`` with each step, for kernels
        that declare such costs only; ``None`` until then.
    draws : array, tree of arrays, or None
        The kept draws (None until the first one).
    flush_every : int
        Buffered :meth:`record_masked` calls after which a driver reports progress.
    """

    n_steps: int
    n_chains: int
    thin: int
    steps_done: np.ndarray
    rungs: np.ndarray
    n_moves: np.ndarray
    non_finite: np.ndarray
    step_cost: np.ndarray | None
    step_overhead: np.ndarray | None
    draws: Any
    flush_every: int

    def record(
        self,
        chains: np.ndarray,
        steps: np.ndarray,
        draw: Any,
        rung: np.ndarray,
        n_moves: np.ndarray,
        non_finite: np.ndarray,
        cost: np.ndarray | None = None,
        overhead: np.ndarray | None = None,
    ) -> None:
        """Step ``steps[i]`` of chain ``chains[i]`` for every ``i`` (``draw=None``: the
        draws were written already with :meth:`record_draws`; ``cost``: each step's
        gradient evaluations per map application, maps with ``cost_of`` only;
        ``overhead``: each step's gradient evaluations outside them, or None)."""

    def record_draws(self, chains: np.ndarray, steps: np.ndarray, draw: Any) -> None:
        """The draws of step ``steps[i]`` of chain ``chains[i]`` that ``thin`` keeps."""

    def record_row(
        self, step: int, draw: Any, rung, n_moves, non_finite, cost=None, overhead=None
    ) -> None:
        """Step ``step`` of every chain at once (chains in order); ``cost`` and
        ``overhead`` as for :meth:`record`."""

    def record_masked(
        self,
        mask: np.ndarray | None,
        chains: np.ndarray,
        steps: np.ndarray,
        draw: Any,
        rung: np.ndarray,
        n_moves: np.ndarray,
        non_finite: np.ndarray,
        cost: np.ndarray | None = None,
        overhead: np.ndarray | None = None,
    ) -> bool:
        """Buffer the steps where ``mask`` (every ``i`` if None); True when it flushed."""

    def draw_rows(self, draw: Any) -> np.ndarray | None:
        """The kept draws as one ``(n_kept * n_chains, ...)`` array to write into, or None."""

    def costs(self) -> np.ndarray:
        """:attr:`step_cost`, allocated on first use (for writers that fill it themselves)."""

    def record_written(self, steps_done: np.ndarray) -> None:
        """Count the steps a writer put into :meth:`draw_rows` and the statistics."""

    def flush(self) -> None:
        """Write the buffered steps of :meth:`record_masked`."""

    def completed(self) -> int:
        """Steps completed by every chain."""
