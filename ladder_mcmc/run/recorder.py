"""The recorder: where a driver writes each chain's steps as it takes them.

Draws (kept every ``thin`` steps) and per-step ladder statistics (rung taken, map
applications, non-finite rungs, and, for a map whose cost varies per chain and step,
the gradient evaluations per map application; for a refresh or a refreshed density that
evaluates gradients, those of the step outside its map applications), each chain at its
own step; in memory, or in
``.npy`` files on disk (:mod:`ladder_mcmc.run.draws_files`). A
:class:`~ladder_mcmc.run.trace.Trace` is made of what it holds.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ladder_mcmc.arrays import release_rows
from ladder_mcmc.engine.recording import gradients
from ladder_mcmc.ladder import batch
from ladder_mcmc.run import draws_files


def rung_dtype(max_rung: int) -> np.dtype:
    """The smallest of int8, int16, int32 that holds the rung codes ``-1 .. max_rung``."""
    for dtype in (np.int8, np.int16, np.int32):
        if max_rung <= np.iinfo(dtype).max:
            return np.dtype(dtype)
    raise ValueError(f"max_rung must be at most {np.iinfo(np.int32).max}, got {max_rung!r}")


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

    ``max_rung``: the largest rung code the kernel reports (``kernel.max_rung``);
    the rung codes are held in the smallest integer type that holds it
    (:func:`rung_dtype`).

    ``step_cost``: ``None`` until a driver hands a step's cost (maps with ``cost_of``,
    whose gradient evaluations per map application vary per chain and step); then
    an int32 array (n_steps, chains), so that a run of a fixed-cost map keeps its
    memory. ``step_overhead``: the same for the gradient evaluations of a step outside
    its map applications (``StepInfo.overhead``: a refresh that reports its cost, the
    log density at the refreshed state). :meth:`grad_evals_per_step` counts with both.
    """

    def __init__(
        self,
        n_steps: int,
        n_chains: int,
        thin: int = 1,
        allocate=None,
        flush_every: int = 64,
        max_rung: int = 0,
    ) -> None:
        self.n_steps, self.n_chains, self.thin = n_steps, n_chains, thin
        self.n_kept = n_steps // thin
        self.rungs = np.zeros((n_steps, n_chains), dtype=rung_dtype(max_rung))
        self.n_moves = np.zeros((n_steps, n_chains), dtype=np.int16)
        self.non_finite = np.zeros((n_steps, n_chains), dtype=np.int16)
        self.steps_done = np.zeros(n_chains, dtype=np.int64)
        self.step_cost: np.ndarray | None = None
        self.step_overhead: np.ndarray | None = None
        self.step_stats: dict[str, np.ndarray] = {}
        self.draws: Any = None
        # np.zeros, not np.empty: calloc'd pages are mapped lazily and cheaply,
        # while first writes into np.empty memory in scattered order (the
        # ragged driver's) cost up to ten times more (benchmarks/results/overhead.md)
        self._allocate = allocate or (lambda shape, dtype: np.zeros(shape, dtype=dtype))
        self.flush_every = flush_every
        self._buffer: list[tuple] = []
        self._flat_draws: np.ndarray | None = None
        self._mapped: list[np.memmap] = []  # disk-backed draw arrays
        self._released = 0  # rows of them already written out and unmapped
        self._release_every = 0

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
        stats: dict[str, np.ndarray] | None = None,
    ) -> None:
        """Record step ``steps[i]`` of chain ``chains[i]`` for every ``i``.

        ``draw=None``: the draws were written already (:meth:`record_draws`).
        ``cost``: gradient evaluations per map application of each step (maps with
        ``cost_of``), or None. ``overhead``: gradient evaluations of each step outside
        its map applications (``StepInfo.overhead``), or None. ``stats``: more per-step
        figures by name (:attr:`step_stats`: the energy, the first stage's probability,
        the energy error), or None.
        """
        self.rungs[steps, chains] = rung
        for name, values in (stats or {}).items():
            self.stat(name)[steps, chains] = values
        self.n_moves[steps, chains] = n_moves
        self.non_finite[steps, chains] = non_finite
        if cost is not None:
            self.costs()[steps, chains] = cost
        if overhead is not None:
            self.overheads()[steps, chains] = overhead
        self.steps_done[chains] = steps + 1
        if draw is not None:
            self.record_draws(chains, steps, draw)
        if self._mapped:
            self._release(self.completed())

    def stat(self, name: str) -> np.ndarray:
        """The per-step figure ``name`` (:attr:`step_stats`), allocated (NaN) on first use."""
        found = self.step_stats.get(name)
        if found is None:
            found = self.step_stats[name] = np.full((self.n_steps, self.n_chains), np.nan)
        return found

    def costs(self) -> np.ndarray:
        """:attr:`step_cost`, allocated (zeros) on first use."""
        if self.step_cost is None:
            self.step_cost = np.zeros((self.n_steps, self.n_chains), dtype=np.int32)
        return self.step_cost

    def overheads(self) -> np.ndarray:
        """:attr:`step_overhead`, allocated (zeros) on first use."""
        if self.step_overhead is None:
            self.step_overhead = np.zeros((self.n_steps, self.n_chains), dtype=np.int32)
        return self.step_overhead

    def grad_evals_per_step(self, cost: Any, done: int | None = None) -> np.ndarray:
        """Gradient evaluations of each recorded step and chain, (done, chains).

        ``n_moves`` times :attr:`step_cost` when steps came with their cost, else
        times ``cost`` (the map's fixed ``cost``), plus :attr:`step_overhead` when
        steps came with one. ``done``: the steps every chain has completed (default
        :meth:`completed`).
        """
        done = self.completed() if done is None else done
        per_move = cost if self.step_cost is None else self.step_cost[:done]
        overhead = None if self.step_overhead is None else self.step_overhead[:done]
        return gradients(self.n_moves[:done], per_move, overhead)

    def record_draws(self, chains: np.ndarray, steps: np.ndarray, draw: Any) -> None:
        """Write the draws of step ``steps[i]`` of chain ``chains[i]`` (those ``thin`` keeps).

        The steps count as recorded only once :meth:`record` has their statistics.
        """
        if self.thin == 1:
            keep = None
        else:
            keep = (steps + 1) % self.thin == 0
        if keep is None or keep.any():
            self._write_draws(steps, chains, draw, keep)

    def draw_rows(self, draw: Any) -> np.ndarray | None:
        """The kept draws as one C-contiguous ``(n_kept * n_chains, ...)`` array, or None.

        For writers that fill the trace themselves (the compiled ragged
        driver): step ``s`` of chain ``c``, when ``thin`` keeps it
        (``(s + 1) % thin == 0``), goes to row ``((s + 1) // thin - 1) * n_chains + c``.
        ``draw`` is one batch of draws, the template of the first allocation
        (made here: ask only when a draw is to be kept). None when the draws
        are not one such array (a tree of draws, or an allocator's
        non-contiguous array): use :meth:`record` then. After writing, call
        :meth:`record_written`.
        """
        if not isinstance(draw, np.ndarray):
            return None
        self._store(draw)
        return self._flat_draws

    def record_written(self, steps_done: np.ndarray) -> None:
        """Every chain has ``steps_done`` steps: statistics and draws written in place."""
        self.steps_done[:] = steps_done
        if self._mapped:
            self._release(self.completed())

    def _store(self, draw: Any) -> Any:
        """The draw arrays, allocated (by ``allocate``) on the first kept draw."""
        if self.draws is None:
            self.adopt_draws(
                batch.tree_map(
                    lambda leaf: self._allocate(
                        (self.n_kept, self.n_chains) + np.shape(leaf)[1:], np.asarray(leaf).dtype
                    ),
                    draw,
                )
            )
        return self.draws

    def adopt_draws(self, draws: Any, released: int = 0) -> None:
        """Hold the draws in ``draws`` (leaves shaped (n_kept, n_chains, ...)).

        Used for arrays allocated by ``allocate`` and, on resume, for the draws
        so far (in memory, or a draws file reopened). ``released``: rows of the
        disk-backed leaves whose pages are known not to be resident (not dirty).
        """
        for leaf in batch.leaves(draws):
            if np.shape(leaf)[:2] != (self.n_kept, self.n_chains):
                raise ValueError(
                    f"draws of shape {np.shape(leaf)} do not fit {self.n_kept} kept rows "
                    f"of {self.n_chains} chains"
                )
        self.draws = draws
        self._flat_draws = None
        if isinstance(draws, np.ndarray) and draws.flags.c_contiguous:
            # (n_kept * chains, ...) view: one flat index per write
            self._flat_draws = draws.reshape((-1,) + draws.shape[2:])
        mapped = [leaf for leaf in batch.leaves(draws) if isinstance(leaf, np.memmap)]
        self._mapped = mapped
        if mapped:
            row_bytes = sum(leaf.strides[0] for leaf in mapped)
            self._release_every = max(1, draws_files.RELEASE_BYTES // max(row_bytes, 1))
        self._released = released

    def _release(self, done: int) -> None:
        """Hand back to the OS the pages of disk-backed rows every chain has passed."""
        rows = done // self.thin
        if rows - self._released < self._release_every and rows < self.n_kept:
            return
        for leaf in self._mapped:
            release_rows(leaf, self._released, rows)
        self._released = rows

    def _write_draws(self, steps, chains, draw, keep) -> None:
        if keep is not None:
            steps, chains = steps[keep], chains[keep]
            draw = batch.take(draw, keep)
        rows = steps if self.thin == 1 else (steps + 1) // self.thin - 1
        flat = rows * self.n_chains + chains
        store = self._store(draw)
        if type(draw) is np.ndarray and self._flat_draws is not None:
            _scatter_rows(self._flat_draws, flat, draw)  # the common case, without tree_map
            return

        def write(store: np.ndarray, leaf: np.ndarray) -> np.ndarray:
            _scatter(store, flat, rows, chains, leaf)
            return store

        batch.tree_map(write, store, draw)

    def record_row(
        self,
        step: int,
        draw: Any,
        rung,
        n_moves,
        non_finite,
        cost=None,
        overhead=None,
        stats: dict[str, np.ndarray] | None = None,
    ) -> None:
        """Record step ``step`` of every chain at once (chains in order); ``cost``,
        ``overhead`` and ``stats`` as for :meth:`record`."""
        if self._buffer:
            self.flush()
        self.rungs[step] = rung
        for name, values in (stats or {}).items():
            self.stat(name)[step] = values
        self.n_moves[step] = n_moves
        self.non_finite[step] = non_finite
        if cost is not None:
            self.costs()[step] = cost
        if overhead is not None:
            self.overheads()[step] = overhead
        self.steps_done[:] = step + 1
        if (step + 1) % self.thin == 0:
            row = (step + 1) // self.thin - 1
            store = self._store(draw)
            if type(draw) is np.ndarray:
                store[row] = draw
            else:

                def write(store: np.ndarray, leaf: np.ndarray) -> np.ndarray:
                    store[row] = leaf
                    return store

                batch.tree_map(write, store, draw)
            if self._mapped:
                self._release(step + 1)

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
        stats: dict[str, np.ndarray] | None = None,
    ) -> bool:
        """Buffer step ``steps[i]`` of chain ``chains[i]`` for every ``i`` with ``mask[i]``.

        ``mask = None`` means every ``i``; ``cost`` and ``overhead`` as for
        :meth:`record`. The arrays
        are kept by reference until the next :meth:`flush`: the caller must not modify
        them in place.
        A chain's steps must come in increasing order. Returns True if the
        buffer was flushed.
        """
        self._buffer.append(
            (mask, chains, steps, draw, rung, n_moves, non_finite, cost, overhead, stats)
        )
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
        self._write_buffer(buf)
        if self._mapped:
            self._release(self.completed())

    def _write_buffer(self, buf: list[tuple]) -> None:
        """Write buffered entries: statistics in one scatter each, draws entry by entry."""

        def cat(k: int) -> np.ndarray:
            return np.concatenate([b[k] for b in buf])

        if all(b[0] is None for b in buf):
            sel = None
        else:
            sel = np.concatenate([np.ones(len(b[1]), bool) if b[0] is None else b[0] for b in buf])
        all_chains, all_steps = cat(1), cat(2)
        chains, steps = all_chains, all_steps
        rung, n_moves, non_finite = cat(4), cat(5), cat(6)
        # a kernel's steps all come with a cost (an overhead) or none do
        cost = None if buf[0][7] is None else cat(7)
        overhead = None if buf[0][8] is None else cat(8)
        stats = {} if buf[0][9] is None else {
            name: np.concatenate([b[9][name] for b in buf]) for name in buf[0][9]
        }  # fmt: skip
        if sel is not None:
            chains, steps = chains[sel], steps[sel]
            rung, n_moves, non_finite = rung[sel], n_moves[sel], non_finite[sel]
            cost = None if cost is None else cost[sel]
            overhead = None if overhead is None else overhead[sel]
            stats = {name: values[sel] for name, values in stats.items()}
        flat = steps * self.n_chains + chains
        _scatter(self.rungs, flat, steps, chains, rung)
        _scatter(self.n_moves, flat, steps, chains, n_moves)
        _scatter(self.non_finite, flat, steps, chains, non_finite)
        if cost is not None:
            _scatter(self.costs(), flat, steps, chains, cost)
        if overhead is not None:
            _scatter(self.overheads(), flat, steps, chains, overhead)
        for name, values in stats.items():
            _scatter(self.stat(name), flat, steps, chains, values)
        # a chain may appear several times; its steps increase, so keep the largest
        np.maximum.at(self.steps_done, chains, steps + 1)
        # draws: entry by entry, in order, every chain of the entry (no gather).
        # A chain still inside its step writes a placeholder at the row of
        # that step, which its own record, in a later entry, overwrites; until
        # then the row is past ``completed()``, so no trace ever shows it.
        fast = self.thin == 1 and type(buf[0][3]) is np.ndarray
        if fast:
            self._store(buf[0][3])
            fast = self._flat_draws is not None
        if fast:
            flat_all = all_steps * self.n_chains + all_chains
            lo = 0
            for b in buf:
                hi = lo + len(b[1])
                self._flat_draws[flat_all[lo:hi]] = b[3]
                lo = hi
            return
        for _mask, b_chains, b_steps, b_draw, *_ in buf:
            if self.thin == 1:
                self._write_draws(b_steps, b_chains, b_draw, None)
            else:
                keep = (b_steps + 1) % self.thin == 0
                if keep.any():
                    self._write_draws(b_steps, b_chains, b_draw, keep)

    def completed(self) -> int:
        """Steps completed by every chain."""
        return int(self.steps_done.min()) if self.n_chains else 0


def _scatter(store: np.ndarray, flat, rows, cols, values) -> None:
    """``store[rows, cols] = values``, through the flat index ``rows * n_cols + cols``.

    (One flat index is cheaper than a pair; a non-contiguous store, whose
    reshape would be a copy, takes the pair.)
    """
    if store.flags.c_contiguous:
        store.reshape((-1,) + store.shape[2:])[flat] = values
    else:
        store[rows, cols] = values


def _scatter_rows(store: np.ndarray, index: np.ndarray, values: np.ndarray) -> None:
    """``store[index] = values`` for rows of a C-contiguous ``store`` (rows, ...).

    Each row is viewed as one opaque record, so numpy copies whole rows in a
    1-d fancy assignment (for 2-d draws about ten times faster than the
    row-by-row subspace copy of a 2-d fancy index; same bytes).
    """
    if store.ndim == 2 and values.ndim == 2 and values.dtype == store.dtype:
        values = np.ascontiguousarray(values)
        record = np.dtype((np.void, store.dtype.itemsize * store.shape[1]))
        if store.flags.c_contiguous and values.shape[1] == store.shape[1]:
            store.view(record)[:, 0][index] = values.view(record)[:, 0]
            return
    store[index] = values
