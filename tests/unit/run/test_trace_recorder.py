"""Traces that fit: the recorder's bulk writes, thinning, and draws streamed to disk.

Time: about 3 s.
"""

from __future__ import annotations

import attrs
import numpy as np
import pytest

from ladder_mcmc import lahmc, sample
from ladder_mcmc.models import IllConditionedGaussian, RoughWell
from ladder_mcmc.run import draws_files
from ladder_mcmc.run.draws_files import memmap_allocator
from ladder_mcmc.run.recorder import Recorder

WELL = RoughWell()
X0 = WELL.sample(10, np.random.default_rng(1))


def _simulate(recorder: Recorder, n_steps: int, n_chains: int, seed: int) -> None:
    """Feed the recorder like the ragged driver: chains finish steps at random times.

    The draw of chain c at step s is (c, s); chains still inside their step
    pass a NaN placeholder, which must never survive.
    """
    rng = np.random.default_rng(seed)
    step = np.zeros(n_chains, dtype=np.int64)
    ids = np.arange(n_chains)
    # a synchronous start, recorded row by row
    for t in range(3):
        draw = np.stack([ids, np.full(n_chains, t)], axis=1).astype(float)
        recorder.record_row(t, draw, ids % 5, ids % 7, ids % 2)
    step[:] = 3
    while ids.size:
        done = rng.random(ids.size) < 0.4
        everyone = rng.random() < 0.2
        if everyone:
            done[:] = True
        draw = np.stack([ids, step], axis=1).astype(float)
        draw[~done] = np.nan
        recorder.record_masked(
            None if everyone else done, ids, step, draw, ids % 5, ids % 7, ids % 2
        )
        step = step + done
        keep = step < n_steps
        ids, step = ids[keep], step[keep]
    recorder.flush()


@pytest.mark.parametrize("flush_every", [1, 5, 64])
@pytest.mark.parametrize("thin", [1, 3])
def test_buffered_ragged_records_land_where_they_belong(thin, flush_every, tmp_path):
    n_steps, n_chains = 40, 9
    for allocate in (None, memmap_allocator(tmp_path / f"d{thin}{flush_every}.npy")):
        rec = Recorder(n_steps, n_chains, thin, allocate, flush_every=flush_every)
        _simulate(rec, n_steps, n_chains, seed=thin * 100 + flush_every)
        assert rec.completed() == n_steps
        steps = np.arange(thin - 1, n_steps, thin)
        expected = np.stack(np.broadcast_arrays(np.arange(n_chains)[None, :], steps[:, None]), -1)
        np.testing.assert_array_equal(rec.draws, expected.astype(float))
        ids = np.arange(n_chains)
        np.testing.assert_array_equal(rec.rungs, np.broadcast_to(ids % 5, (n_steps, n_chains)))
        np.testing.assert_array_equal(rec.n_moves, np.broadcast_to(ids % 7, (n_steps, n_chains)))
        np.testing.assert_array_equal(rec.non_finite, np.broadcast_to(ids % 2, (n_steps, n_chains)))


def test_statistics_are_small_integers():
    """Per-step statistics stay in RAM: 1 + 2 + 2 bytes per chain-step (50 MB at 10⁵ × 100)."""
    rec = Recorder(1000, 100, thin=10)
    assert rec.rungs.dtype == np.int8
    assert rec.n_moves.dtype == np.int16 and rec.non_finite.dtype == np.int16
    assert rec.rungs.nbytes + rec.n_moves.nbytes + rec.non_finite.nbytes == 5 * 1000 * 100


@pytest.mark.parametrize("schedule", ["ragged", "synchronous"])
def test_thin_keeps_every_kth_draw_and_every_statistic(schedule):
    kernel = lahmc(WELL, 1.0, 10, 0.1)
    full = sample(kernel, X0, 62, seed=5, schedule=schedule, warmup=0)
    thin = sample(kernel, X0, 62, seed=5, schedule=schedule, thin=4, warmup=0)
    assert thin.positions.shape == (15, 10, 2)  # 62 // 4: the trailing 2 steps keep no draw
    np.testing.assert_array_equal(thin.positions, full.positions[3::4])
    np.testing.assert_array_equal(thin.rungs, full.rungs)
    np.testing.assert_array_equal(thin.n_moves, full.n_moves)
    np.testing.assert_array_equal(thin.grad_evals, full.grad_evals)
    assert thin.thin == 4


@pytest.mark.parametrize("thin", [1, 2])
@pytest.mark.parametrize("schedule", ["ragged", "synchronous"])
def test_draws_file_streams_the_same_draws_to_disk(schedule, thin, tmp_path, monkeypatch):
    # release finished pages after every 4 kB so that the release path runs here
    monkeypatch.setattr(draws_files, "RELEASE_BYTES", 4096)
    target = IllConditionedGaussian(30)
    kernel = lahmc(target, 1.0, 10, 0.1)
    x0 = target.sample(8, np.random.default_rng(2))
    path = tmp_path / "draws.npy"
    memory = sample(kernel, x0, 70, seed=8, schedule=schedule, thin=thin, warmup=0)
    disk = sample(kernel, x0, 70, seed=8, schedule=schedule, thin=thin, draws_file=path, warmup=0)
    assert isinstance(disk.positions, np.memmap)
    np.testing.assert_array_equal(disk.positions, memory.positions)
    np.testing.assert_array_equal(np.load(path), memory.positions)
    np.testing.assert_array_equal(disk.rungs, memory.rungs)


def test_draws_file_is_never_overwritten(tmp_path):
    path = tmp_path / "draws.npy"
    path.write_bytes(b"precious")
    with pytest.raises(ValueError, match="already exists"):
        sample(lahmc(WELL, 1.0, 10, 0.1), X0, 5, seed=0, draws_file=path, warmup=0)
    assert path.read_bytes() == b"precious"
    with pytest.raises(ValueError, match="does not exist"):
        sample(
            lahmc(WELL, 1.0, 10, 0.1), X0, 5, seed=0, draws_file=tmp_path / "no" / "d.npy", warmup=0
        )


@attrs.frozen
class _Pair:
    a: np.ndarray
    b: np.ndarray


def test_memmap_allocator_puts_each_leaf_in_its_own_file(tmp_path):
    rec = Recorder(4, 2, allocate=memmap_allocator(tmp_path / "d.npy"))
    for t in range(4):
        rec.record_row(t, _Pair(np.full((2, 3), t), np.full(2, -t)), 1, 1, 0)
    np.testing.assert_array_equal(np.load(tmp_path / "d.npy")[:, 0, 0], [0, 1, 2, 3])
    np.testing.assert_array_equal(np.load(tmp_path / "d.1.npy")[:, 1], [0, -1, -2, -3])
