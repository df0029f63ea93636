"""Errors that name the culprit: the target's function that does not trace (not the map
that calls it), and one range for ``Warmup(target_prob=...)``, stated as enforced."""

import math

import numpy as np
import pytest

from ladder_mcmc import Warmup, lahmc, sample
from ladder_mcmc.models import FunctionTarget


@pytest.mark.parametrize("value", [1.5, 1, 1.0, 0, -0.2, math.nan, True, "0.8", None])
def test_target_prob_outside_the_open_unit_interval_is_refused_stating_it(value):
    with pytest.raises(ValueError) as caught:
        Warmup(target_prob=value)
    assert str(caught.value) == f"target_prob must be a number in (0, 1), got {value!r}"


def test_target_prob_inside_is_kept_as_a_float():
    for value in (0.999, np.float32(0.25), 1e-9):
        kept = Warmup(target_prob=value).target_prob
        assert type(kept) is float and kept == float(value)


def host_energy(x):
    """Written with numpy's own conversion: it cannot trace under JAX."""
    x = np.asarray(x)
    return 0.5 * np.einsum("ij,ij->i", x, x)


def host_grad(x):
    return np.array(x)


def traced_energy(x):
    return 0.5 * (x * x).sum(axis=1)


def traced_grad(x):
    return 1.0 * x


@pytest.mark.parametrize(
    "energy, grad, culprit",
    [(host_energy, traced_grad, "energy"), (traced_energy, host_grad, "grad")],
    ids=["energy", "grad"],
)
def test_backend_jax_names_the_target_function_that_does_not_trace(energy, grad, culprit):
    pytest.importorskip("jax")
    target = FunctionTarget(energy, grad, dim=2)
    kernel = lahmc(target, step_size=0.5, n_leapfrog=3, beta=0.1, inverse_mass=np.ones(2))
    with pytest.raises(ValueError) as caught:
        sample(kernel, np.zeros((2, 2)), 5, seed=0, backend="jax", checks=False, warmup=0)
    name = (energy if culprit == "energy" else grad).__name__
    message = str(caught.value)
    assert message.startswith(
        f"backend='jax': the {culprit} of the target FunctionTarget (the function {name}) "
        "does not trace under JAX (TracerArrayConversionError"
    )
    assert message.endswith("so the map Leapfrog does not either")
