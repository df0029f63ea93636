"""Checkpoints of runs that stream their draws to a file (``sample(draws_file=...)``).

The checkpoint records the file instead of copying the draws; ``resume`` goes on
writing the same file (grown in place), or a new one given as ``draws_file``; the
result is bit-identical to an uninterrupted run, and every file problem is a
``ValueError`` before anything is written.
"""

import shutil

import attrs
import numpy as np
import pytest
from interrupting import interrupting
from trace_assertions import assert_same_run

from ladder_mcmc import Checkpoint, Ladder, LookAheadRule, MomentumRefresh, lahmc, resume, sample
from ladder_mcmc.hamiltonian import Leapfrog
from ladder_mcmc.models import FunctionTarget, IllConditionedGaussian
from ladder_mcmc.run import checkpoint as checkpoint_module
from ladder_mcmc.run import draws_files
from ladder_mcmc.run.draws_files import grow_npy_rows

TARGET = IllConditionedGaussian(3)
X0 = TARGET.sample(6, np.random.default_rng(0))


def kernel():
    return lahmc(TARGET, 1.0, 10, 0.1)


assert_same = assert_same_run


def stored_draws_rows(path) -> int:
    with np.load(path) as data:
        return int(data["draws"].shape[0])


@pytest.mark.parametrize("thin", [1, 2])
@pytest.mark.parametrize("schedule", ["ragged", "synchronous"])
def test_resume_grows_the_same_draws_file(tmp_path, schedule, thin, monkeypatch):
    monkeypatch.setattr(draws_files, "RELEASE_BYTES", 512)  # run the page release path
    whole = sample(
        kernel(),
        X0,
        80,
        seed=4,
        schedule=schedule,
        thin=thin,
        checkpoint=Checkpoint(every=20),
        warmup=0,
    )
    ckpt, draws = tmp_path / "c.npz", tmp_path / "d.npy"
    first = sample(
        kernel(),
        X0,
        40,
        seed=4,
        schedule=schedule,
        thin=thin,
        draws_file=draws,
        checkpoint=Checkpoint(ckpt, every=20),
        warmup=0,
    )
    # the checkpoint holds one row of draws (template and fingerprint), not all of them
    assert stored_draws_rows(ckpt) == 1
    rest = resume(ckpt, kernel(), 40)
    assert isinstance(rest.positions, np.memmap) and rest.n_steps == 80
    assert_same(rest, whole)
    np.testing.assert_array_equal(np.load(draws), whole.positions)
    # the first trace's memory map of the file is still valid (the file only grew)
    np.testing.assert_array_equal(first.positions, whole.positions[: 40 // thin])
    # and the checkpoint now describes the longer run: it can be continued again
    more = resume(ckpt, kernel(), 20)
    again = sample(
        kernel(),
        X0,
        100,
        seed=4,
        schedule=schedule,
        thin=thin,
        checkpoint=Checkpoint(every=20),
        warmup=0,
    )
    assert_same(more, again)
    np.testing.assert_array_equal(np.load(draws), again.positions)


@pytest.mark.parametrize("schedule", ["ragged", "synchronous"])
def test_interrupted_run_with_draws_file_resumes_bit_identically(tmp_path, schedule):
    target, calls = interrupting(TARGET, dim=3)
    k = lahmc(target, 1.0, 10, 0.1)
    whole = sample(k, X0, 60, seed=9, schedule=schedule, checkpoint=Checkpoint(every=15), warmup=0)
    calls.update(n=0, limit=int(whole.n_moves.max(axis=1).sum() * 0.6))
    ckpt, draws = tmp_path / "run.npz", tmp_path / "run.npy"
    broken = sample(
        k,
        X0,
        60,
        seed=9,
        schedule=schedule,
        draws_file=draws,
        checkpoint=Checkpoint(ckpt, every=15),
        warmup=0,
    )
    assert broken.interrupted and 15 <= broken.n_steps < 60
    assert isinstance(broken.positions, np.memmap)
    calls["limit"] = None
    finished = resume(ckpt, k)
    assert not finished.interrupted
    assert_same(finished, whole)
    np.testing.assert_array_equal(np.load(draws), whole.positions)


def test_resume_into_a_new_draws_file_leaves_the_old_one_alone(tmp_path):
    ckpt, old, new = tmp_path / "c.npz", tmp_path / "old.npy", tmp_path / "new.npy"
    sample(
        kernel(), X0, 40, seed=4, draws_file=old, checkpoint=Checkpoint(ckpt, every=20), warmup=0
    )
    before = old.read_bytes()
    rest = resume(ckpt, kernel(), 40, draws_file=new)
    whole = sample(kernel(), X0, 80, seed=4, checkpoint=Checkpoint(every=20), warmup=0)
    assert_same(rest, whole)
    assert old.read_bytes() == before
    np.testing.assert_array_equal(np.load(new), whole.positions)
    # the checkpoint follows the new file: the old one is no longer needed
    old.unlink()
    more = resume(ckpt, kernel(), 20)
    np.testing.assert_array_equal(
        np.load(new),
        sample(kernel(), X0, 100, seed=4, checkpoint=Checkpoint(every=20), warmup=0).positions,
    )
    assert more.n_steps == 100


def test_resume_moves_in_memory_draws_to_a_file(tmp_path):
    ckpt, new = tmp_path / "c.npz", tmp_path / "new.npy"
    sample(kernel(), X0, 40, seed=4, checkpoint=Checkpoint(ckpt, every=20), warmup=0)
    assert stored_draws_rows(ckpt) == 40  # no draws file: the draws are in the checkpoint
    rest = resume(ckpt, kernel(), 40, draws_file=new)
    assert isinstance(rest.positions, np.memmap)
    assert_same(rest, sample(kernel(), X0, 80, seed=4, checkpoint=Checkpoint(every=20), warmup=0))
    assert stored_draws_rows(ckpt) == 1


def test_a_folder_moved_as_a_whole_still_resumes(tmp_path):
    (tmp_path / "a").mkdir()
    ckpt, draws = tmp_path / "a" / "c.npz", tmp_path / "a" / "d.npy"
    sample(
        kernel(), X0, 40, seed=4, draws_file=draws, checkpoint=Checkpoint(ckpt, every=20), warmup=0
    )
    shutil.move(tmp_path / "a", tmp_path / "b")
    rest = resume(tmp_path / "b" / "c.npz", kernel(), 40)
    assert_same(rest, sample(kernel(), X0, 80, seed=4, checkpoint=Checkpoint(every=20), warmup=0))
    assert not (tmp_path / "a").exists()
    np.testing.assert_array_equal(np.load(tmp_path / "b" / "d.npy"), rest.positions)


@attrs.frozen(eq=False)
class FullDrawLeapfrog(Leapfrog):
    """Leapfrog whose trace records the whole phase state (four leaves, four files)."""

    def draw(self, state):
        return state


def test_draws_with_several_leaves_resume_from_their_files(tmp_path):
    k = Ladder(FullDrawLeapfrog(TARGET, 1.0, 10), LookAheadRule(4), MomentumRefresh(0.1))
    ckpt, draws = tmp_path / "c.npz", tmp_path / "d.npy"
    sample(k, X0, 30, seed=3, draws_file=draws, checkpoint=Checkpoint(ckpt, every=10), warmup=0)
    assert sorted(p.name for p in tmp_path.glob("d*.npy")) == [
        "d.1.npy",
        "d.2.npy",
        "d.3.npy",
        "d.npy",
    ]
    rest = resume(ckpt, k, 20)
    whole = sample(k, X0, 50, seed=3, checkpoint=Checkpoint(every=10), warmup=0)
    for i, field in enumerate(["x", "v", "energy", "grad"]):
        expected = getattr(whole.states, field)
        np.testing.assert_array_equal(getattr(rest.states, field), expected)
        name = "d.npy" if i == 0 else f"d.{i}.npy"
        np.testing.assert_array_equal(np.load(tmp_path / name), expected)


def test_sample_refuses_an_existing_file_for_any_leaf(tmp_path):
    k = Ladder(FullDrawLeapfrog(TARGET, 1.0, 10), LookAheadRule(4), MomentumRefresh(0.1))
    (tmp_path / "d.2.npy").write_bytes(b"precious")
    with pytest.raises(ValueError, match="d.2.npy.*already exists"):
        sample(k, X0, 5, seed=0, draws_file=tmp_path / "d.npy", warmup=0)
    assert (tmp_path / "d.2.npy").read_bytes() == b"precious"
    assert not (tmp_path / "d.npy").exists()
    with pytest.raises(ValueError, match="same file"):
        sample(
            kernel(), X0, 5, draws_file=tmp_path / "x.npz", checkpoint=tmp_path / "x.npz", warmup=0
        )


@pytest.fixture
def interrupted_run(tmp_path):
    """A 40-step run with a draws file, checkpointed at step 20 of 60."""
    ckpt, draws = tmp_path / "c.npz", tmp_path / "d.npy"
    sample(
        kernel(), X0, 40, seed=4, draws_file=draws, checkpoint=Checkpoint(ckpt, every=20), warmup=0
    )
    return ckpt, draws


def assert_refused(ckpt, draws, match, **kwargs):
    before = (ckpt.read_bytes(), draws.read_bytes() if draws.exists() else None)
    with pytest.raises(ValueError, match=match):
        resume(ckpt, kernel(), **kwargs)
    assert (ckpt.read_bytes(), draws.read_bytes() if draws.exists() else None) == before


def test_missing_draws_file_is_refused(interrupted_run):
    ckpt, draws = interrupted_run
    draws.unlink()
    assert_refused(ckpt, draws, "draws file of checkpoint .* is missing", n_steps=10)


def test_draws_file_of_the_wrong_shape_or_dtype_is_refused(interrupted_run):
    ckpt, draws = interrupted_run
    good = np.load(draws)
    draws.unlink()
    np.save(draws, good.astype(np.float32))
    assert_refused(ckpt, draws, "float32", n_steps=10)
    draws.unlink()
    np.save(draws, good[:, :, :2])
    assert_refused(ckpt, draws, r"shape \(40, 6, 2\)", n_steps=10)
    draws.unlink()
    np.save(draws, good[:10])
    assert_refused(ckpt, draws, "holds 10 rows; the checkpoint has 40", n_steps=10)
    draws.write_bytes(b"not an npy file")
    assert_refused(ckpt, draws, "not a readable .npy", n_steps=10)


def test_another_runs_draws_file_is_refused(interrupted_run):
    ckpt, draws = interrupted_run
    good = np.load(draws)
    draws.unlink()
    np.save(draws, good + 1.0)  # same shape and dtype, other numbers
    assert_refused(ckpt, draws, "does not hold this run's draws", n_steps=10)


def test_resume_never_overwrites_or_cuts_a_file(interrupted_run, tmp_path):
    ckpt, draws = interrupted_run
    other = tmp_path / "other.npy"
    other.write_bytes(b"precious")
    assert_refused(ckpt, draws, "already exists", n_steps=10, draws_file=other)
    assert other.read_bytes() == b"precious"
    # a run that was longer than the resumed one would leave stale rows: refused
    long_ckpt, long_draws = tmp_path / "long.npz", tmp_path / "long.npy"
    calls = {"n": 0}

    def energy(x):
        calls["n"] += 1
        if calls["n"] > 50:  # an energy call per map application: ~40 steps
            raise KeyboardInterrupt
        return TARGET.energy(x)

    k = lahmc(FunctionTarget(energy, TARGET.grad, dim=3), 1.0, 10, 0.1)
    broken = sample(
        k,
        X0,
        100,
        seed=4,
        draws_file=long_draws,
        checkpoint=Checkpoint(long_ckpt, every=10),
        warmup=0,
    )
    assert broken.interrupted and broken.n_steps >= 10
    assert np.load(long_draws).shape[0] == 100
    calls["n"] = -(10**9)
    done = broken.n_steps // 10 * 10
    before = long_draws.read_bytes()
    with pytest.raises(ValueError, match="cut short"):
        resume(long_ckpt, k, 5)
    assert long_draws.read_bytes() == before
    finished = resume(long_ckpt, k, 100 - done)  # the original length is fine
    assert finished.n_steps == 100


def test_version_1_checkpoints_still_resume(tmp_path, monkeypatch):
    monkeypatch.setattr(checkpoint_module, "VERSION", 1)
    ckpt = tmp_path / "c.npz"
    sample(kernel(), X0, 40, seed=4, checkpoint=Checkpoint(ckpt, every=20), warmup=0)
    monkeypatch.undo()
    assert_same(
        resume(ckpt, kernel(), 40),
        sample(kernel(), X0, 80, seed=4, checkpoint=Checkpoint(every=20), warmup=0),
    )


def test_grow_npy_rows_keeps_the_data_and_old_maps(tmp_path):
    path = tmp_path / "a.npy"
    a = np.lib.format.open_memmap(path, mode="w+", dtype=np.float64, shape=(3, 2))
    a[:] = np.arange(6.0).reshape(3, 2)
    a.flush()
    size = path.stat().st_size
    grown = grow_npy_rows(path, 1000)
    assert grown.shape == (1000, 2)
    assert path.stat().st_size == size + 997 * 2 * 8  # header length unchanged
    np.testing.assert_array_equal(grown[:3], a)
    np.testing.assert_array_equal(grown[3:], 0.0)
    grown[999] = 7.0
    grown.flush()
    np.testing.assert_array_equal(np.load(path)[999], [7.0, 7.0])
    np.testing.assert_array_equal(a, np.arange(6.0).reshape(3, 2))  # old map still valid
    with pytest.raises(ValueError, match="cannot grow"):
        grow_npy_rows(path, 10)


def test_a_checkpoint_before_the_first_kept_draw_resumes_into_the_file(tmp_path, monkeypatch):
    ckpt, draws = tmp_path / "c.npz", tmp_path / "d.npy"
    save = checkpoint_module.save

    def save_then_stop(*args, **kwargs):  # Ctrl-C right after the checkpoint at step 10
        save(*args, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(checkpoint_module, "save", save_then_stop)
    first = sample(
        kernel(),
        X0,
        30,
        seed=5,
        thin=15,
        draws_file=draws,
        checkpoint=Checkpoint(ckpt, every=10),
        warmup=0,
    )
    monkeypatch.setattr(checkpoint_module, "save", save)
    assert first.interrupted and first.n_steps == 10
    assert first.states.shape == (0, 6, 3) and not draws.exists()  # no draw kept, no file
    rest = resume(ckpt, kernel())
    whole = sample(kernel(), X0, 30, seed=5, thin=15, checkpoint=Checkpoint(every=10), warmup=0)
    assert_same(rest, whole)
    np.testing.assert_array_equal(np.load(draws), whole.positions)
