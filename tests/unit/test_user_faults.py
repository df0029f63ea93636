"""Faults a new user met, each reproduced and held fixed."""

from __future__ import annotations

import io
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from ladder_mcmc import FunctionTarget, Ladder, Leapfrog, LookAheadRule, hmc, lahmc, sample
from ladder_mcmc.diagnostics import summary
from ladder_mcmc.diagnostics.ess import posterior_statistics
from ladder_mcmc.hamiltonian import lifted_lahmc
from ladder_mcmc.models import IllConditionedGaussian, RoughWell
from ladder_mcmc.paper import cli
from ladder_mcmc.run import progress as progress_module

A = IllConditionedGaussian(2, log_condition=1)  # variances 1, 10
B = IllConditionedGaussian(2, log_condition=3)  # variances 1, 1000


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def test_continuing_on_another_target_samples_that_target():
    """``sample(lahmc(B), first.final, …)`` recomputes what the state caches for B (energy,
    gradient, log density): the chains move and reach B's variance."""
    first = _quiet(sample, lahmc(A), A.sample(4, np.random.default_rng(0)), 200, seed=1, warmup=200)
    second = _quiet(sample, lahmc(B), first.final, 300, seed=2, warmup=300)
    assert np.all(second.final.state.energy == B.energy(second.final.state.x))
    assert second.transition_fractions()["F"] < 0.5  # it moves
    assert 300 < np.var(second.positions[:, :, 1]) < 3000


def test_a_state_of_another_dimension_is_refused():
    first = _quiet(sample, lahmc(A, 0.5, 3, 1.0), A.sample(4, np.random.default_rng(0)), 5, seed=1)
    with pytest.raises(ValueError, match="dimension 2 but the target has dim=3"):
        sample(lahmc(IllConditionedGaussian(3)), first.final, 10, seed=2)


def test_summary_of_a_short_run_keeps_location_and_spread():
    x = np.random.default_rng(0).normal(size=(3, 50, 2))
    stats = posterior_statistics(x)
    flat = x.reshape(-1, 2)
    np.testing.assert_allclose(stats["mean"], flat.mean(axis=0))
    np.testing.assert_allclose(stats["sd"], flat.std(axis=0, ddof=1))
    np.testing.assert_allclose(stats["eti_95%"], np.quantile(flat, 0.95, axis=0))
    assert np.all(np.isnan(stats["ess_bulk"])) and np.all(np.isnan(stats["r_hat"]))
    trace = _quiet(sample, lahmc(A, 0.5, 3, 1.0), A.sample(50, np.random.default_rng(1)), 3, seed=0)
    assert np.all(np.isfinite(summary(trace).mean))


@pytest.mark.parametrize("make", [lahmc, hmc, lifted_lahmc])
@pytest.mark.parametrize("bad", [None, 3, lambda x: x])
def test_a_kernel_without_a_target_is_refused(make, bad):
    with pytest.raises(ValueError, match="target"):
        make(bad)


def test_a_gradient_of_the_wrong_shape_is_named():
    squeezed = FunctionTarget(lambda x: 0.5 * (x**2).sum(1), lambda x: np.squeeze(x), dim=2)
    kernel = Ladder(Leapfrog(squeezed, 0.3, 3), LookAheadRule(2))
    with pytest.raises(ValueError, match=r"FunctionTarget returned gradient of shape \(2,\)"):
        sample(kernel, np.full((1, 2), 0.1), 10, seed=0, checks=False)


def test_a_given_step_size_keeps_the_mass_it_was_chosen_for():
    assert lahmc(A, step_size=0.5, n_leapfrog=10, beta=0.1).adapt == frozenset()
    assert "inverse_mass" not in lahmc(A, step_size=0.5).adapt
    assert "inverse_mass" in lahmc(A).adapt
    assert lifted_lahmc(RoughWell(), step_size=0.1).adapt == frozenset()


def test_an_interrupt_during_warm_up_returns_its_last_state(monkeypatch):
    """Ctrl-C in warm-up: no draws, but ``trace.final`` holds the chains where they were,
    to go on from."""
    from ladder_mcmc.hamiltonian.warmup import adaptation

    calls = {"n": 0}
    original = adaptation.HMCAdaptation.update

    def interrupting(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 30:
            raise KeyboardInterrupt
        return original(self, *args, **kwargs)

    monkeypatch.setattr(adaptation.HMCAdaptation, "update", interrupting)
    x0 = A.sample(4, np.random.default_rng(0))
    trace = _quiet(sample, lahmc(A), x0, 100, seed=1, warmup=200)
    assert trace.interrupted and trace.n_steps == 0
    assert trace.final is not None and not np.array_equal(trace.final.state.x, x0)


def test_progress_is_shown_on_a_terminal_and_quiet_elsewhere(monkeypatch):
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setattr(progress_module, "_in_notebook", lambda: False)
    assert progress_module.interactive(Terminal())
    assert not progress_module.interactive(io.StringIO())


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs a folder that refuses new folders")
def test_cli_refuses_an_output_folder_it_cannot_make(capsys, tmp_path):
    """``--out /proc/nope``: one line on stderr and exit code 2, no traceback; a ``--json``
    file in a missing folder: a usage error, and no folder made."""
    assert cli.main(["table1", "--out", "/proc/nope", "--steps", "2", "--chains", "2"]) == 2
    assert "cannot make the output folder '/proc/nope'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["table1", "--json", str(tmp_path / "missing" / "x.json")])
    assert "does not exist" in capsys.readouterr().err
    assert not (tmp_path / "missing").exists()


def test_cli_help_says_what_each_command_takes(capsys):
    with pytest.raises(SystemExit):
        cli.main(["table1", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "figure3" not in text and "per cell" not in text and "whole paper" not in text
    with pytest.raises(SystemExit):
        cli.main(["paper", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "the whole paper in under two minutes on 2 cores" in text  # measured 49-102 s


def test_importing_the_package_does_not_load_scipy_stats():
    code = "import sys, ladder_mcmc; print('scipy.stats' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.slow
def test_a_float32_model_is_sampled_promoted_and_its_gradient_checked_at_its_precision():
    """A JAX model that computes in float32 (TensorFlow Probability's substrate does, even
    under x64) is accepted with a warning, and the gradient check allows for float32
    rounding (at float64's it reported that the energy does not change)."""
    jnp = pytest.importorskip("jax.numpy")
    from ladder_mcmc.models import from_jax

    def log_p(x):
        return -0.5 * jnp.sum(jnp.asarray(x, jnp.float32) ** 2 / jnp.array([1.0, 4.0], jnp.float32))

    with pytest.warns(UserWarning, match="float32 for a float64 point"):
        target = from_jax(log_p, dim=2)
    assert target.precision == np.finfo(np.float32).eps
    trace = _quiet(sample, lahmc(target), np.full((4, 2), 0.3), 400, seed=1, warmup=300)
    assert 2.0 < np.var(trace.positions[:, :, 1]) < 8.0
