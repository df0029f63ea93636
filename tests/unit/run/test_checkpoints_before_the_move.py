"""Checkpoints written before the package moved into subpackages (issue 14) still resume.

A checkpoint names its state classes by module (``ladder_mcmc.hmc:PhaseState`` before
the move) and holds the fingerprint of the kernel's parameters, which hashes the
modules of the kernel's classes. The classes resolve by their former paths, and the
fingerprint hashes the former modules (``ladder_mcmc.former_paths``): the fingerprints
below were computed before the move and must not change.
"""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest
from trace_assertions import assert_same_run

from ladder_mcmc import (
    DirectionRefresh,
    Ladder,
    Leapfrog,
    LookAhead,
    LookAheadRule,
    McLachlan2,
    MomentumRefresh,
    NormalizedMomentumRefresh,
    PersistentUniformRule,
    PowerKinetic,
    hmc,
    lahmc,
    lifted_lahmc,
    resume,
    sample,
)
from ladder_mcmc.models import IllConditionedGaussian, RoughWell, posteriors
from ladder_mcmc.run import checkpoint
from ladder_mcmc.verify import FiniteLadder

GAUSS = IllConditionedGaussian(3)
WELL = RoughWell()
POWER = PowerKinetic(1.5, np.ones(2))

#: kernel -> its fingerprint as ladder_mcmc computed it before the move
BEFORE = {
    "lahmc": (
        lambda: lahmc(GAUSS, 0.5, 5, 0.1, 3, inverse_mass=np.array([1.0, 2.0, 3.0])),
        "7b37b3df6ae918f352cd924bce0560c948082b1a65b0eb68201a0482d51fcb0b",
    ),
    "hmc jittered": (
        lambda: hmc(WELL, 0.5, 5, 0.2, jitter=0.1),
        "ed2bf18a7b329169e2b7423aed371f5fa896fc1591df2989ba7b36c9b5972ee2",
    ),
    "lifted": (
        lambda: lifted_lahmc(WELL, 0.5, 10),
        "88c4498eccef784002b7d0eca5fb333c7a23925e77df685a97f602006122b8af",
    ),
    "mclachlan": (
        lambda: Ladder(
            McLachlan2(WELL, 0.3, 2),
            PersistentUniformRule(3, delta=Fraction(1, 7)),
            MomentumRefresh(1.0),
        ),
        "d42acfa1bb7cc73349c69d8084b456f14b8edf41fdeacf8ef93ffa014e5f9b48",
    ),
    "power kinetic": (
        lambda: Ladder(
            Leapfrog(WELL, 0.01, 20, POWER), LookAheadRule(4), NormalizedMomentumRefresh(0.3, POWER)
        ),
        "b9bb07dde002a692796144d53eb780e928181e6c10b12bf6d02c562647e400a8",
    ),
    "finite": (
        lambda: LookAhead(FiniteLadder([1, 2, 0], [1, 2, 3]), max_rungs=2),
        "a30960ab87836c392aea134c5c980691b056068e6b0c33c1911362fa563c9009",
    ),
    "posterior": (
        lambda: lahmc(posteriors.load("kidiq-kidscore_momiq"), 0.1, 5, 0.5),
        "541226d40f338cf04d03d8114d94ae93de97e0dd13b99dae5c3b8f903b938630",
    ),
}

#: the state classes as checkpoints written before the move name them
FORMER_CLASSES = {
    "ladder_mcmc.ladder.kernel:LadderState": "ladder_mcmc.ladder:LadderState",
    "ladder_mcmc.hamiltonian.leapfrog:PhaseState": "ladder_mcmc.hmc:PhaseState",
    "ladder_mcmc.hamiltonian.jitter:JitteredPhaseState": "ladder_mcmc.jitter:JitteredPhaseState",
    "ladder_mcmc.run.warmup_result:WarmupResult": "ladder_mcmc.adaptation:WarmupResult",
}


@pytest.mark.parametrize("name", list(BEFORE))
def test_fingerprints_are_those_computed_before_the_move(name):
    make, before = BEFORE[name]
    assert checkpoint.fingerprint(make()) == before


def _with_former_class_names(path) -> int:
    """Rewrite the checkpoint ``path`` as one written before the move; return the classes
    renamed."""
    with np.load(path, allow_pickle=False) as data:
        arrays = {key: data[key] for key in data.files}
    text = str(arrays["meta"][()])
    renamed = 0
    for new, old in FORMER_CLASSES.items():
        renamed += text.count(json.dumps(new))
        text = text.replace(json.dumps(new), json.dumps(old))
    arrays["meta"] = np.array(text)
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)
    return renamed


@pytest.mark.parametrize("jitter", [0.0, 0.2])
def test_a_checkpoint_naming_the_former_classes_resumes_bit_for_bit(tmp_path, jitter):
    kernel = lahmc(WELL, 0.8, 5, 0.3, 3, jitter=jitter)
    x0 = WELL.sample(5, np.random.default_rng(0))
    options = {"seed": 4, "checkpoint_every": 10, "warmup": 20, "checks": False}
    whole = sample(kernel, x0, 40, **options)
    path = tmp_path / "before.npz"
    sample(kernel, x0, 20, checkpoint=path, **options)
    assert _with_former_class_names(path) >= 3  # the kernel state, its phase state, warm-up
    meta, _ = checkpoint.load(path)
    assert "ladder_mcmc.ladder:LadderState" in json.dumps(meta["structure"])
    assert_same_run(resume(path, kernel, 20, checks=False), whole)


def test_direction_refresh_kernels_keep_their_fingerprint_across_equal_copies():
    """A control: the fingerprint is a function of values, not of object identity."""
    a = LookAhead(FiniteLadder([1, 0], [1, 3]), max_rungs=2, refresh=DirectionRefresh(0.5))
    b = LookAhead(FiniteLadder([1, 0], [1, 3]), max_rungs=2, refresh=DirectionRefresh(0.5))
    assert checkpoint.fingerprint(a) == checkpoint.fingerprint(b)
