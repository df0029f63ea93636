"""JAX log densities of the posteriordb targets against their numpy energies and gradients.

For every model (parametrised over ``posteriors.names()``, so a new model without a JAX
version fails here; and the centred eight schools), ``jax_log_density(target)`` and
``jax.grad`` of it must equal ``-target.energy`` and ``-target.grad`` at random
unconstrained points, in float64.
The values check the JAX version against the numpy one term for term; the gradients
check the hand-derived numpy gradients against automatic differentiation. Mutants (one
gradient component off by 0.1 %, a Jacobian term dropped) show the check can fail.
Most of its time is compiling one ``value_and_grad`` per model.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ladder_mcmc.models import posteriors as pdb
from ladder_mcmc.models.posteriors.posterior import Posterior

jax = pytest.importorskip("jax")

ROOT = Path(__file__).resolve().parents[3]
MODULE = importlib.import_module("ladder_mcmc.models.posteriors.jax_densities")
NAMES = pdb.names()

# Both sides sum up to ~10³ terms in float64 (unit roundoff 1.1e-16), in different orders
# (scan vs. loop, dot vs. einsum, autodiff vs. hand chain rule), so they may differ by about
# n · 1e-16 times the size of the terms summed: 1e-13 at most. The tolerance, 1e-9
# relative to the value (or gradient component) plus 1e-9 times the scale of the terms
# (max(1, |E|) for values, max(1, max_i |∂_i E|) for gradients, covering a component that
# is small through cancellation), leaves 10⁴ of headroom and is still 10⁶ below the
# 1e-3 relative error of the mutants below.
RTOL = 1e-9
ATOL = 1e-9


@pytest.fixture(scope="module", params=NAMES)
def target(request):
    return pdb.load(request.param)


def points(target: Posterior, seed: int = 0) -> np.ndarray:
    """Stan's initial box (5 points uniform on (-2, 2)), 2 points near the posterior (its
    reference unconstrained mean ± 2 sd), and 2 at radius 5 where the energy is finite."""
    rng = np.random.default_rng(seed)
    un = target.reference.unconstrained
    mean = np.array([v["mean"] for v in un.values()])
    sd = np.array([v["sd"] for v in un.values()])
    init = rng.uniform(-2, 2, size=(5, target.dim))
    near = mean + sd * rng.uniform(-2, 2, size=(2, target.dim))
    wide = rng.uniform(-5, 5, size=(2, target.dim))
    wide = wide[np.isfinite(target.energy(wide))]
    return np.vstack([init, near, wide])


def jax_value_and_grad(log_p, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``log_p`` and its gradient at each row of ``x``, in float64 (one compile)."""
    with jax.enable_x64(True):
        f = jax.jit(jax.value_and_grad(log_p))
        out = [f(row) for row in x]
        assert all(v.dtype == np.float64 for v, _ in out)
        return np.array([float(v) for v, _ in out]), np.array([np.asarray(g) for _, g in out])


def assert_agree(target: Posterior, log_p, x: np.ndarray) -> tuple[float, float]:
    """Raise AssertionError unless ``log_p`` and its gradient are ``-E`` and ``-∇E`` of
    ``target`` at the rows of ``x`` (see RTOL, ATOL). Returns the largest relative
    disagreements (value, gradient), each relative to its scale."""
    value, grad = jax_value_and_grad(log_p, x)
    energy, energy_grad = target.energy_and_grad(x)
    assert np.all(np.isfinite(energy)) and np.all(np.isfinite(energy_grad))
    value_scale = np.maximum(1.0, np.abs(energy))
    grad_scale = np.maximum(1.0, np.abs(energy_grad).max(axis=1, keepdims=True))
    value_err = np.abs(value + energy)
    grad_err = np.abs(grad + energy_grad)
    value_ok = value_err <= RTOL * np.abs(energy) + ATOL * value_scale
    grad_ok = grad_err <= RTOL * np.abs(energy_grad) + ATOL * grad_scale
    if not (value_ok.all() and grad_ok.all()):
        bad_rows, bad_cols = np.nonzero(~grad_ok)
        raise AssertionError(
            f"{target.name}: JAX and numpy disagree; values at points "
            f"{np.flatnonzero(~value_ok).tolist()} (max rel. error "
            f"{(value_err / value_scale).max():.3g}), gradients at (point, component) "
            f"{list(zip(bad_rows.tolist(), bad_cols.tolist(), strict=True))} (max rel. error "
            f"{(grad_err / grad_scale).max():.3g})"
        )
    return float((value_err / value_scale).max()), float((grad_err / grad_scale).max())


def test_every_model_has_a_jax_version():
    # and the centred eight schools, which borrows the non-centred record (not in MODELS)
    assert set(MODULE.BUILDERS) == set(pdb.MODELS.values()) | {pdb.EightSchoolsCentered}


def test_centred_eight_schools_jax_matches_numpy():
    target = pdb.EightSchoolsCentered.load()
    value_err, grad_err = assert_agree(target, pdb.jax_log_density(target), points(target))
    assert value_err < 1e-12 and grad_err < 1e-12


def test_jax_log_density_matches_numpy_energy_and_gradient(target):
    x = points(target)
    assert len(x) >= 7
    value_err, grad_err = assert_agree(target, pdb.jax_log_density(target), x)
    assert value_err < 1e-12 and grad_err < 1e-12  # in practice: rounding, a few 1e-14


def test_a_gradient_off_by_a_tenth_of_a_percent_is_caught(monkeypatch):
    """Mutant of the hand gradient: garch's alpha1 component (the trickiest chain rule)
    scaled by 1.001."""
    target = pdb.load("garch-garch11")
    log_p = pdb.jax_log_density(target)
    x = points(target)
    assert_agree(target, log_p, x)
    honest = type(target)._energy_and_grad

    def broken(self, x):
        e, g = honest(self, x)
        g[:, 2] *= 1.001
        return e, g

    monkeypatch.setattr(type(target), "_energy_and_grad", broken)
    with pytest.raises(AssertionError, match="gradients at"):
        assert_agree(target, log_p, x)


def test_a_dropped_jacobian_term_is_caught():
    """Mutant of the JAX version: kidiq without the log sigma of its Jacobian."""
    target = pdb.load("kidiq-kidscore_momiq")
    log_p = pdb.jax_log_density(target)
    x = points(target)
    with pytest.raises(AssertionError, match="disagree"):
        assert_agree(target, lambda u: log_p(u) - u[2], x)


def test_unknown_class_raises_naming_it_and_the_supported_ones():
    class Other(Posterior):
        dim = 1

    with pytest.raises(ValueError, match=r"Other; supported: .*KidscoreMomiq"):
        pdb.jax_log_density(Other())


def test_subclass_is_not_taken_for_its_base():
    """A subclass may change the energy: it must not silently get the base's density."""
    base = pdb.load("kidiq-kidscore_momiq")

    class Changed(type(base)):
        pass

    with pytest.raises(ValueError, match="Changed"):
        pdb.jax_log_density(Changed(base.kid_score, base.mom_iq))


def test_wrong_shape_raises():
    log_p = pdb.jax_log_density(pdb.load("kidiq-kidscore_momiq"))
    with jax.enable_x64(True), pytest.raises(ValueError, match=r"shape \(3,\)"):
        log_p(np.zeros((2, 3)))


def test_without_jax_the_error_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "jax", None)  # makes ``import jax`` raise ImportError
    with pytest.raises(ImportError, match=r"pip install 'ladder_mcmc\[jax\]'"):
        pdb.jax_log_density(pdb.load("kidiq-kidscore_momiq"))


def test_importing_posteriors_does_not_import_jax():
    code = "import sys, ladder_mcmc.models.posteriors as p; print(p.jax_log_density.__name__, "
    code += "'jax' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["jax_log_density", "False"]
