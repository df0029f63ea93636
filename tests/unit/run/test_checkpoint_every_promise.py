"""What ``sample`` promises for any ``Checkpoint.every``: on numpy the draws are bit-identical;
on JAX another ``every`` cuts the run into other compiled blocks, and the draws agree to
rounding (rung codes exactly, positions to 1e-12), while the same ``every`` and a resume
at its cut points give the uncut run's draws bit for bit."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from ladder_mcmc import Checkpoint, lahmc, resume, sample
from ladder_mcmc.models import FunctionTarget

jnp = pytest.importorskip("jax.numpy")
from ladder_mcmc.models import from_jax  # noqa: E402

PRECISION = np.linalg.inv(np.array([[1.0, 0.5, 0.0], [0.5, 2.0, 0.3], [0.0, 0.3, 0.5]]))
X0 = np.random.default_rng(1).normal(size=(5, 3)) * 0.5
#: diagonal mass with both jitters: the case where a block's first step rounded differently
SETTINGS = {
    "step_size": 0.4,
    "n_leapfrog": 4,
    "beta": 0.3,
    "inverse_mass": np.array([0.5, 1.0, 2.0]),
}
JITTERS = {
    "step jitter": {"jitter": 0.2, "length_jitter": 0.0},
    "length jitter": {"length_jitter": 0.75},
}
NUMPY = FunctionTarget(
    lambda x: 0.5 * np.einsum("ij,jk,ik->i", x, PRECISION, x),
    lambda x: np.einsum("jk,ik->ij", PRECISION, x),
    dim=3,
)
JAX = from_jax(lambda x: -0.5 * x @ (jnp.asarray(PRECISION) @ x), 3)


def run(target, every=None, n_steps=40, step_size=0.4, path=None, jitter="length jitter"):
    kernel = lahmc(target, **{**SETTINGS, **JITTERS[jitter], "step_size": step_size})
    saving = None if every is None else Checkpoint(path, every=every)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sample(kernel, X0, n_steps, seed=3, warmup=0, checks=False, checkpoint=saving)


def close(a, b) -> None:
    """The JAX promise: the same rung codes, positions to 1e-12."""
    np.testing.assert_array_equal(a.rungs, b.rungs)
    np.testing.assert_allclose(a.positions, b.positions, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("jitter", list(JITTERS))
def test_numpy_draws_are_bit_identical_for_any_every(jitter):
    whole = run(NUMPY, jitter=jitter)
    assert whole.backend["name"] == "numpy"
    for every in (3, 7):
        cut = run(NUMPY, every, jitter=jitter)
        np.testing.assert_array_equal(cut.positions, whole.positions)
        np.testing.assert_array_equal(cut.rungs, whole.rungs)


@pytest.mark.parametrize("jitter", list(JITTERS))
def test_jax_draws_agree_to_rounding_for_any_every_and_exactly_on_resume(tmp_path, jitter):
    whole = run(JAX, jitter=jitter)
    assert whole.backend["name"] == "jax"
    assert len(np.unique(whole.rungs)) > 1  # the rule's outcomes vary: the check has teeth
    for every in (3, 7):
        close(run(JAX, every, jitter=jitter), whole)
    path = tmp_path / "run.npz"
    cut = run(JAX, 10, n_steps=20, path=path, jitter=jitter)
    same_every = run(JAX, 10, jitter=jitter)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rest = resume(path, lahmc(JAX, **SETTINGS, **JITTERS[jitter]), 20, checks=False)
    np.testing.assert_array_equal(rest.positions[:20], cut.positions)
    np.testing.assert_array_equal(rest.positions, same_every.positions)


def test_the_comparisons_catch_a_kernel_nudged_in_its_9th_digit():
    nudged = 0.4 * (1 + 1e-9)
    with pytest.raises(AssertionError):
        close(run(JAX), run(JAX, step_size=nudged))
    with pytest.raises(AssertionError):
        np.testing.assert_array_equal(run(NUMPY).positions, run(NUMPY, step_size=nudged).positions)
