"""Checkpoints: atomic, data only, refuse what is not theirs; resume is bit-identical."""

import json

import numpy as np
import pytest
from interrupting import interrupting
from trace_assertions import assert_same_run

from ladder_mcmc import (
    Checkpoint,
    DirectionRefresh,
    Ladder,
    Leapfrog,
    LookAhead,
    LookAheadRule,
    MomentumRefresh,
    lahmc,
    resume,
    sample,
)
from ladder_mcmc.hamiltonian import Metric
from ladder_mcmc.models import IllConditionedGaussian
from ladder_mcmc.run import checkpoint
from ladder_mcmc.verify import FiniteLadder

TARGET = IllConditionedGaussian(2)
X0 = TARGET.sample(12, np.random.default_rng(0))


def kernel():
    return lahmc(TARGET, 1.0, 10, 0.1)


assert_same = assert_same_run


@pytest.mark.parametrize("schedule", ["ragged", "synchronous"])
def test_resume_extends_a_run_bit_identically(tmp_path, schedule):
    whole = sample(
        kernel(), X0, 80, seed=4, schedule=schedule, checkpoint=Checkpoint(every=20), warmup=0
    )
    first = sample(
        kernel(),
        X0,
        40,
        seed=4,
        schedule=schedule,
        checkpoint=Checkpoint(tmp_path / "c.npz", every=20),
        warmup=0,
    )
    assert first.n_steps == 40
    rest = resume(tmp_path / "c.npz", kernel(), 40)
    assert rest.n_steps == 80
    assert_same(rest, whole)


def test_synchronous_runs_do_not_depend_on_checkpointing(tmp_path):
    plain = sample(kernel(), X0, 60, seed=4, schedule="synchronous", warmup=0)
    ckpt = sample(
        kernel(),
        X0,
        60,
        seed=4,
        schedule="synchronous",
        checkpoint=Checkpoint(tmp_path / "c.npz", every=7),
        warmup=0,
    )
    assert_same(plain, ckpt)


@pytest.mark.parametrize("schedule", ["ragged", "synchronous"])
def test_crash_then_resume_equals_uninterrupted(tmp_path, schedule):
    target, calls = interrupting(TARGET, dim=2)
    k = lahmc(target, 1.0, 10, 0.1)
    whole = sample(k, X0, 60, seed=9, schedule=schedule, checkpoint=Checkpoint(every=15), warmup=0)
    calls.update(n=0, limit=int(whole.n_moves.max(axis=1).sum() * 0.6))
    path = tmp_path / "run.npz"
    broken = sample(
        k, X0, 60, seed=9, schedule=schedule, checkpoint=Checkpoint(path, every=15), warmup=0
    )
    assert broken.interrupted and 15 <= broken.n_steps < 60
    calls["limit"] = None
    finished = resume(path, k)
    assert_same(finished, whole)


def test_resume_keeps_warmup(tmp_path):
    path = tmp_path / "w.npz"
    a = sample(kernel(), X0, 30, seed=2, warmup=60, checkpoint=Checkpoint(path, every=10))
    b = resume(path, kernel(), 10)
    whole = sample(kernel(), X0, 40, seed=2, warmup=60, checkpoint=Checkpoint(every=10))
    assert b.warmup.step_size == a.warmup.step_size == whole.warmup.step_size
    assert_same(b, whole)


def test_generic_states_round_trip(tmp_path):
    ladder = FiniteLadder([1, 2, 3, 0], [1, 2, 3, 4])
    k = LookAhead(ladder, 2, DirectionRefresh(0.5))
    path = tmp_path / "f.npz"
    sample(k, np.array([0, 1, 2]), 10, seed=1, checkpoint=Checkpoint(path, every=5), warmup=0)
    more = resume(path, k, 10)
    whole = sample(k, np.array([0, 1, 2]), 20, seed=1, checkpoint=Checkpoint(every=5), warmup=0)
    np.testing.assert_array_equal(more.states, whole.states)


def test_refuses_to_overwrite_and_another_kernel(tmp_path):
    path = tmp_path / "c.npz"
    sample(kernel(), X0, 10, seed=1, checkpoint=Checkpoint(path, every=5), warmup=0)
    before = path.read_bytes()
    with pytest.raises(ValueError, match="already exists"):
        sample(kernel(), X0, 10, seed=1, checkpoint=path, warmup=0)
    with pytest.raises(ValueError, match="another kernel"):
        resume(path, lahmc(TARGET, 0.9, 10, 0.1))
    assert path.read_bytes() == before
    with pytest.raises(ValueError, match="does not exist"):
        sample(kernel(), X0, 10, checkpoint=tmp_path / "missing" / "c.npz", warmup=0)


def test_refuses_corrupt_and_foreign_files(tmp_path):
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip file at all")
    with pytest.raises(ValueError, match="corrupt"):
        resume(bad, kernel())
    foreign = tmp_path / "foreign.npz"
    np.savez(foreign, meta=np.array(json.dumps({"format": "something else"})))
    with pytest.raises(ValueError, match="not a ladder_mcmc checkpoint"):
        resume(foreign, kernel())
    future = tmp_path / "future.npz"
    np.savez(future, meta=np.array(json.dumps({"format": "ladder_mcmc.checkpoint", "version": 99})))
    with pytest.raises(ValueError, match="version 99"):
        resume(future, kernel())


def test_checkpoint_is_written_atomically(tmp_path, monkeypatch):
    """A failure while writing leaves the previous checkpoint intact and no temporary file."""
    from ladder_mcmc.run import checkpoint

    path = tmp_path / "c.npz"
    sample(kernel(), X0, 10, seed=1, checkpoint=Checkpoint(path, every=5), warmup=0)
    good = path.read_bytes()

    def exploding_savez(fh, **arrays):
        fh.write(b"half a file")
        raise OSError("disk full")

    monkeypatch.setattr(checkpoint.np, "savez", exploding_savez)
    with pytest.raises(OSError, match="disk full"):
        checkpoint.save(path, {"kernel": {}}, {"x": np.zeros(3)})
    assert path.read_bytes() == good
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.npz"]


def by_hand(target=TARGET, inverse_mass=None):
    """``lahmc(target, 1, 10, .1)`` built part by part: two equal metrics, not one shared."""
    return Ladder(
        Leapfrog(target, 1.0, 10, Metric(inverse_mass)),
        LookAheadRule(4),
        MomentumRefresh(0.1, Metric(inverse_mass)),
    )


def test_a_kernel_equal_in_value_resumes_whatever_it_shares(tmp_path):
    """lahmc shares one Metric between map and refresh; by hand there are two equal ones."""
    shared = lahmc(TARGET, 1.0, 10, 0.1)
    assert shared.map.metric is shared.refresh.metric
    assert checkpoint.fingerprint(shared) == checkpoint.fingerprint(by_hand())
    whole = sample(shared, X0, 20, seed=3, checkpoint=Checkpoint(every=10), warmup=0)
    for first, then in ((shared, by_hand()), (by_hand(), shared)):
        path = tmp_path / f"{type(first.refresh.metric).__name__}{first is shared}.npz"
        sample(first, X0, 10, seed=3, checkpoint=Checkpoint(path, every=10), warmup=0)
        assert_same(resume(path, then, 10), whole)


@pytest.mark.parametrize(
    "other",
    [
        lambda: by_hand(inverse_mass=np.array([1.0, 2.0 + 1e-12])),
        lambda: lahmc(TARGET, 1.0, 10, 0.1, inverse_mass=np.array([1.0, 2.5])),
        lambda: by_hand(IllConditionedGaussian(2, log_condition=5.0), np.array([1.0, 2.0])),
    ],
    ids=["mass by hand", "mass shared", "target"],
)
def test_a_kernel_differing_in_a_value_is_refused_whatever_it_shares(tmp_path, other):
    path = tmp_path / "c.npz"
    k = lahmc(TARGET, 1.0, 10, 0.1, inverse_mass=np.array([1.0, 2.0]))
    sample(k, X0, 10, seed=3, checkpoint=Checkpoint(path, every=5), warmup=0)
    assert other().describe() == k.describe()
    with pytest.raises(ValueError, match="other parameters"):
        resume(path, other())
    assert resume(path, by_hand(inverse_mass=np.array([1.0, 2.0]))).n_steps == 10


def test_the_fingerprint_of_a_cycle_ends_and_depends_on_values():
    def make(scale):
        def energy(x):  # closes over itself: a cycle
            return energy.__name__ and scale * x

        return energy

    assert checkpoint.fingerprint(make(1.0)) == checkpoint.fingerprint(make(1.0))
    assert checkpoint.fingerprint(make(1.0)) != checkpoint.fingerprint(make(2.0))
