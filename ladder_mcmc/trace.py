"""The record of a run: draws, per-step ladder statistics, bookkeeping."""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from ladder_mcmc import batch


class Recorder:
    """Collects draws and per-step statistics, each chain at its own step.

    Draws are kept every ``thin`` steps; the per-step statistics (rung taken,
    map applications, non-finite rungs) are kept for every step whatever the
    thinning. ``allocate(shape, dtype)`` makes the arrays that hold the draws
    (in memory by default; :func:`memmap_allocator` writes them to ``.npy``
    files on disk instead).

    Steps come either one batch at a time through :meth:`record`, or buffered
    through :meth:`record_masked` (the ragged driver: one call per iteration
    costs a list append; the buffer is written out every ``flush_every``
    calls, by :meth:`flush`, in a few whole-array operations).
    """

    def __init__(
        self,
        n_steps: int,
        n_chains: int,
        thin: int = 1,
        allocate=None,
        flush_every: int = 64,
    ) -> None:
        self.n_steps, self.n_chains, self.thin = n_steps, n_chains, thin
        self.n_kept = n_steps // thin
        self.rungs = np.zeros((n_steps, n_chains), dtype=np.int8)
        self.n_moves = np.zeros((n_steps, n_chains), dtype=np.int16)
        self.non_finite = np.zeros((n_steps, n_chains), dtype=np.int16)
        self.steps_done = np.zeros(n_chains, dtype=np.int64)
        self.draws: Any = None
        self._allocate = allocate or (lambda shape, dtype: np.empty(shape, dtype=dtype))
        self.flush_every = flush_every
        self._buffer: list[tuple] = []

    def record(
        self,
        chains: np.ndarray,
        steps: np.ndarray,
        draw: Any,
        rung: np.ndarray,
        n_moves: np.ndarray,
        non_finite: np.ndarray,
    ) -> None:
        """Record step ``steps[i]`` of chain ``chains[i]`` for every ``i``."""
        self.rungs[steps, chains] = rung
        self.n_moves[steps, chains] = n_moves
        self.non_finite[steps, chains] = non_finite
        self.steps_done[chains] = steps + 1
        if self.thin == 1:
            keep = None
        else:
            keep = (steps + 1) % self.thin == 0
            if not keep.any():
                return
        self._write_draws(steps, chains, draw, keep)

    def _write_draws(self, steps, chains, draw, keep) -> None:
        if keep is not None:
            steps, chains = steps[keep], chains[keep]
            draw = batch.take(draw, keep)
        rows = (steps + 1) // self.thin - 1
        if self.draws is None:
            self.draws = batch.tree_map(
                lambda leaf: self._allocate(
                    (self.n_kept, self.n_chains) + np.shape(leaf)[1:], np.asarray(leaf).dtype
                ),
                draw,
            )

        def write(store: np.ndarray, leaf: np.ndarray) -> np.ndarray:
            store[rows, chains] = leaf
            return store

        batch.tree_map(write, self.draws, draw)

    def record_masked(
        self,
        mask: np.ndarray | None,
        chains: np.ndarray,
        steps: np.ndarray,
        draw: Any,
        rung: np.ndarray,
        n_moves: np.ndarray,
        non_finite: np.ndarray,
    ) -> bool:
        """Buffer step ``steps[i]`` of chain ``chains[i]`` for every ``i`` with ``mask[i]``.

        ``mask = None`` means every ``i``. The arrays are kept by reference
        until the next :meth:`flush`: the caller must not modify them in place.
        Returns True if the buffer was flushed.
        """
        self._buffer.append((mask, chains, steps, draw, rung, n_moves, non_finite))
        if len(self._buffer) >= self.flush_every:
            self.flush()
            return True
        return False

    @property
    def pending(self) -> int:
        """Calls of :meth:`record_masked` not yet flushed."""
        return len(self._buffer)

    def flush(self) -> None:
        """Write the buffered steps of :meth:`record_masked` into the arrays."""
        buf, self._buffer = self._buffer, []
        if not buf:
            return

        def cat(k: int) -> np.ndarray:
            return np.concatenate([b[k] for b in buf])

        if all(b[0] is None for b in buf):
            sel = None
        else:
            sel = np.concatenate([np.ones(len(b[1]), bool) if b[0] is None else b[0] for b in buf])
        chains, steps = cat(1), cat(2)
        rung, n_moves, non_finite = cat(4), cat(5), cat(6)
        if sel is not None:
            chains, steps = chains[sel], steps[sel]
            rung, n_moves, non_finite = rung[sel], n_moves[sel], non_finite[sel]
        self.rungs[steps, chains] = rung
        self.n_moves[steps, chains] = n_moves
        self.non_finite[steps, chains] = non_finite
        self.steps_done[chains] = steps + 1
        # draws: gather only the entries that hold a kept step
        kept_steps, kept_chains, parts = [], [], []
        for mask, b_chains, b_steps, b_draw, *_ in buf:
            keep = mask
            if self.thin > 1:
                by_thin = (b_steps + 1) % self.thin == 0
                keep = by_thin if keep is None else keep & by_thin
            if keep is None:
                kept_steps.append(b_steps)
                kept_chains.append(b_chains)
                parts.append(b_draw)
            elif keep.any():
                kept_steps.append(b_steps[keep])
                kept_chains.append(b_chains[keep])
                parts.append(batch.take(b_draw, keep))
        if parts:
            draw = parts[0] if len(parts) == 1 else batch.tree_map(_concat, *parts)
            self._write_draws(np.concatenate(kept_steps), np.concatenate(kept_chains), draw, None)

    def completed(self) -> int:
        """Steps completed by every chain."""
        return int(self.steps_done.min()) if self.n_chains else 0


def _concat(*leaves: np.ndarray) -> np.ndarray:
    return np.concatenate(leaves)


@attrs.frozen(eq=False)
class Trace:
    """The result of :func:`ladder_mcmc.sample`.

    Attributes
    ----------
    states : State
        Recorded draws, leaves shaped (n_kept, chains, ...): what ``map.draw``
        returns after each kept step (positions for leapfrog).
    rungs : int8 array (n_steps, chains)
        The rung each step took: ``a ≥ 1`` rung ``L^a``, ``0`` flip, ``-1`` stay.
    n_moves : int array (n_steps, chains)
        Map applications per step.
    non_finite_rungs : int array (n_steps, chains)
        Rungs per step whose density was not finite.
    cost : int
        Gradient evaluations per map application.
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
    warmup : WarmupResult or None
        Adapted step size and mass matrix, and the warm-up's own gradient
        evaluations (not included in ``grad_evals``), when ``warmup > 0``.
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
        """
        total = self.rungs.size
        counts = self.rung_counts
        out = {"F": counts[0] / total}
        out.update({f"L{a}": counts[a] / total for a in range(1, self.max_rung + 1)})
        if self.stay_count:
            out["stay"] = self.stay_count / total
        return {k: float(v) for k, v in out.items()}

    @property
    def grad_evals_per_step(self) -> np.ndarray:
        """Gradient evaluations per step and chain, (n_steps, chains)."""
        return self.n_moves.astype(np.int64) * self.cost

    @property
    def grad_evals(self) -> np.ndarray:
        """Gradient evaluations computed per chain, (chains,)."""
        return self.grad_evals_per_step.sum(axis=0)

    @property
    def non_finite(self) -> int:
        """Total rungs whose density was not finite (counted as density zero)."""
        return int(self.non_finite_rungs.sum())
