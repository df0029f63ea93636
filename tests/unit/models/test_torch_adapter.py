"""from_torch: a PyTorch log density of one point as a batched float64 target.

That ``import ladder_mcmc`` (which imports this adapter's module) does not import torch
is checked with the other optional dependencies, in a subprocess, in
``tests/unit/test_public_api.py``.
"""

import sys

import numpy as np
import pytest

from ladder_mcmc import lahmc, sample
from ladder_mcmc.models import IllConditionedGaussian, from_torch
from ladder_mcmc.models.adapters.compiled import CompiledTarget, padded_size

torch = pytest.importorskip("torch")

GAUSS = IllConditionedGaussian(3, log_condition=2)
PREC = torch.from_numpy(np.asarray(GAUSS.precisions, dtype=float))


def gauss_log_density(x):
    return -0.5 * torch.sum(x * x * PREC)


def test_values_and_gradients_match_the_numpy_target_in_float64():
    assert torch.get_default_dtype() == torch.float32  # the adapter must not need float64
    t = from_torch(gauss_log_density, 3)
    x = np.random.default_rng(0).standard_normal((5, 3)) * 1e3
    e, g = t.energy_and_grad(x)
    assert e.dtype == np.float64 and g.dtype == np.float64 and e.shape == (5,)
    e0, g0 = GAUSS.energy_and_grad(x)
    np.testing.assert_allclose(e, e0, rtol=1e-14)
    np.testing.assert_allclose(g, g0, rtol=1e-14)
    assert torch.get_default_dtype() == torch.float32  # and must not change it


def test_energy_convention_gives_the_same_target():
    by_log_p = from_torch(gauss_log_density, 3)
    by_energy = from_torch(energy=lambda x: -gauss_log_density(x), dim=3)
    x = np.random.default_rng(1).standard_normal((4, 3))
    np.testing.assert_array_equal(by_log_p.energy(x), by_energy.energy(x))
    np.testing.assert_array_equal(by_log_p.grad(x), by_energy.grad(x))


def test_weights_that_require_a_gradient_leave_no_graph_and_no_gradient():
    # an nn.Module's parameters: the energy must come back as plain numbers, call after call
    prec = torch.nn.Parameter(PREC.clone())
    t = from_torch(lambda x: -0.5 * torch.sum(x * x * prec), 3)
    x = np.random.default_rng(5).standard_normal((4, 3))
    for _ in range(2):
        np.testing.assert_allclose(t.energy(x), GAUSS.energy(x), rtol=1e-14)
    assert prec.grad is None


def test_inputs_torch_cannot_share_are_copied_not_refused():
    t = from_torch(gauss_log_density, 3)
    x = np.random.default_rng(6).standard_normal((4, 3))
    expected = t.energy(x)
    reversed_rows = x[::-1]  # negative strides
    np.testing.assert_array_equal(t.energy(reversed_rows), expected[::-1])
    x.flags.writeable = False
    with np.testing.assert_no_warnings():
        np.testing.assert_array_equal(t.energy(x), expected)


def test_lower_precision_energies_come_back_as_float64():
    t = from_torch(lambda x: gauss_log_density(x).float(), 3)
    e, g = t.energy_and_grad(np.ones((2, 3)))
    assert e.dtype == np.float64 and g.dtype == np.float64


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
    assert_rows_are_their_own(from_torch(gauss_log_density, 3), x)


def test_padding_that_leaked_would_be_caught(monkeypatch):
    x = np.random.default_rng(2).standard_normal((7, 3))
    t = from_torch(gauss_log_density, 3)
    unsliced = CompiledTarget.energy_and_grad  # a mutant that pads and forgets to slice

    def padded_only(self, x):
        n = padded_size(x.shape[0])
        return unsliced(self, np.concatenate([x, np.zeros((n - x.shape[0], 3))]))

    monkeypatch.setattr(CompiledTarget, "energy_and_grad", padded_only)
    with pytest.raises(AssertionError):
        assert_rows_are_their_own(t, x)


def data_dependent_if(x):
    return x.sum() if x[0] >= 0 else -x.sum()


@pytest.mark.parametrize(
    ("args", "kwargs", "match"),
    [
        ((), {"dim": 3}, "exactly one of log_density"),
        ((gauss_log_density, 3), {"energy": gauss_log_density}, "exactly one of log_density"),
        ((3, 3), {}, "log_density must be a function of one point"),
        ((gauss_log_density, 0), {}, "dim must be an integer >= 1, got 0"),
        ((gauss_log_density, None), {}, "dim must be an integer >= 1, got None"),
        ((lambda x: x, 3), {}, r"one floating-point scalar .*it returned .*shape \(3,\)"),
        ((lambda x: torch.sum(x).long(), 3), {}, "one floating-point scalar .*torch.int64"),
        ((lambda x: float(torch.sum(x)), 3), {}, r"one floating-point scalar .*returned 0\.0"),
        ((lambda x: x[5] @ x, 3), {}, r"raised on a point of zeros of shape \(3,\): IndexError"),
        ((data_dependent_if, 3), {}, r"torch.func could not .* shape \(3,\)"),
        ((lambda x: x.mul_(2).sum(), 3), {}, "torch.func could not .*: RuntimeError"),
        ((gauss_log_density, 3), {"parameters": ["a"]}, "parameters describe dim = 1"),
    ],
)
def test_bad_input_is_refused_before_sampling(args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        from_torch(*args, **kwargs)


def test_without_torch_the_error_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # makes ``import torch`` raise ImportError
    with pytest.raises(ImportError, match=r"pip install 'ladder_mcmc\[torch\]'"):
        from_torch(gauss_log_density, 3)


def test_sampling_a_torch_target_follows_the_numpy_one():
    # same seed, same kernel: the draws agree to rounding (float64 in both)
    t = from_torch(gauss_log_density, 3, parameters=["a", "b", "c"])
    init = GAUSS.sample(4, np.random.default_rng(3))
    kw = {"seed": 4, "warmup": 0, "checks": False}
    by_torch = sample(lahmc(t, 0.5, 3, 0.5), init, 30, **kw)
    by_numpy = sample(lahmc(GAUSS, 0.5, 3, 0.5), init, 30, **kw)
    np.testing.assert_allclose(by_torch.positions, by_numpy.positions, rtol=1e-9, atol=1e-12)
    assert by_torch.parameters.labels == ("a", "b", "c")
