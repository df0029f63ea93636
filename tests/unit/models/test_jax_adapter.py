"""from_jax: a JAX log density of one point as a batched float64 target."""

import numpy as np
import pytest

from ladder_mcmc import lahmc, sample
from ladder_mcmc.models import IllConditionedGaussian, from_jax
from ladder_mcmc.models.adapters.compiled import CompiledTarget, padded_size

jax = pytest.importorskip("jax")
jnp = jax.numpy

GAUSS = IllConditionedGaussian(3, log_condition=2)
PREC = np.asarray(GAUSS.precisions)


def gauss_log_density(x):
    return -0.5 * jnp.sum(x * x * PREC)


def test_values_and_gradients_match_the_numpy_target_in_float64():
    assert not jax.config.jax_enable_x64  # the adapter must not need the global switch
    t = from_jax(gauss_log_density, 3)
    x = np.random.default_rng(0).standard_normal((5, 3)) * 1e3
    e, g = t.energy_and_grad(x)
    assert e.dtype == np.float64 and g.dtype == np.float64 and e.shape == (5,)
    e0, g0 = GAUSS.energy_and_grad(x)
    np.testing.assert_allclose(e, e0, rtol=1e-14)
    np.testing.assert_allclose(g, g0, rtol=1e-14)
    assert not jax.config.jax_enable_x64  # and must not leave it switched on


def test_energy_convention_gives_the_same_target():
    by_log_p = from_jax(gauss_log_density, 3)
    by_energy = from_jax(energy=lambda x: -gauss_log_density(x), dim=3)
    x = np.random.default_rng(1).standard_normal((4, 3))
    np.testing.assert_array_equal(by_log_p.energy(x), by_energy.energy(x))
    np.testing.assert_array_equal(by_log_p.grad(x), by_energy.grad(x))


def assert_rows_are_their_own(t, x):
    """Every batch size gives each row the values it has in the whole batch."""
    e_all, g_all = t.energy_and_grad(x)
    for n in range(1, x.shape[0] + 1):
        e, g = t.energy_and_grad(x[:n])
        assert e.shape == (n,) and g.shape == (n, x.shape[1])
        np.testing.assert_allclose(e, e_all[:n], rtol=1e-15)
        np.testing.assert_allclose(g, g_all[:n], rtol=1e-15)


def test_every_batch_size_gives_each_row_its_own_values():
    # calls are padded to powers of two; the padding rows must never reach the caller
    x = np.random.default_rng(2).standard_normal((7, 3))
    assert_rows_are_their_own(from_jax(gauss_log_density, 3), x)
    assert [padded_size(n) for n in (1, 2, 3, 4, 5, 8, 9)] == [1, 2, 4, 4, 8, 8, 16]


def test_padding_that_leaked_would_be_caught(monkeypatch):
    x = np.random.default_rng(2).standard_normal((7, 3))
    t = from_jax(gauss_log_density, 3)
    unsliced = CompiledTarget.energy_and_grad  # a mutant that pads and forgets to slice

    def padded_only(self, x):
        n = padded_size(x.shape[0])
        return unsliced(self, np.concatenate([x, np.zeros((n - x.shape[0], 3))]))

    monkeypatch.setattr(CompiledTarget, "energy_and_grad", padded_only)
    with pytest.raises(AssertionError):
        assert_rows_are_their_own(t, x)


@pytest.mark.parametrize(
    ("args", "kwargs", "match"),
    [
        ((), {"dim": 3}, "exactly one of log_density"),
        ((gauss_log_density, 3), {"energy": gauss_log_density}, "exactly one of log_density"),
        ((3, 3), {}, "log_density must be a function of one point"),
        ((gauss_log_density, 0), {}, "dim must be an integer >= 1, got 0"),
        ((gauss_log_density, None), {}, "dim must be an integer >= 1, got None"),
        ((lambda x: x, 3), {}, r"one floating-point scalar .*\(shape=\(3,\)"),
        ((lambda x: jnp.sum(x).astype(int), 3), {}, "one floating-point scalar"),
        ((lambda x: x[5] @ x, 3), {}, r"could not be traced on a point of shape \(3,\)"),
        ((gauss_log_density, 3), {"parameters": ["a"]}, "parameters describe dim = 1"),
    ],
)
def test_bad_input_is_refused_before_sampling(args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        from_jax(*args, **kwargs)


def test_sampling_a_jax_target_follows_the_numpy_one():
    # same seed, same kernel: the draws agree to rounding (float64 in both)
    t = from_jax(gauss_log_density, 3, parameters=["a", "b", "c"])
    init = GAUSS.sample(4, np.random.default_rng(3))
    kw = {"seed": 4, "warmup": 0, "checks": False}
    by_jax = sample(lahmc(t, 0.5, 3, 0.5), init, 30, **kw)
    by_numpy = sample(lahmc(GAUSS, 0.5, 3, 0.5), init, 30, **kw)
    np.testing.assert_allclose(by_jax.positions, by_numpy.positions, rtol=1e-9, atol=1e-12)
    assert by_jax.parameters.labels == ("a", "b", "c")


def test_large_batches_share_their_outputs_and_sample_alike():
    # from 32 rows the outputs are numpy views of JAX's buffers (read-only): the engine
    # must work on them as on copies
    t = from_jax(gauss_log_density, 3)
    init = GAUSS.sample(40, np.random.default_rng(5))
    e, g = t.energy_and_grad(init)
    assert not g.flags.writeable
    np.testing.assert_allclose(g, GAUSS.grad(init), rtol=1e-14)
    kw = {"seed": 6, "warmup": 0, "checks": False}
    by_jax = sample(lahmc(t, 0.5, 3, 0.5), init, 20, **kw)
    by_numpy = sample(lahmc(GAUSS, 0.5, 3, 0.5), init, 20, **kw)
    np.testing.assert_allclose(by_jax.positions, by_numpy.positions, rtol=1e-9, atol=1e-12)
