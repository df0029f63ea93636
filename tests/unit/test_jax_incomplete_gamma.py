"""The regularised incomplete gamma functions on JAX values (``arrays.special``).

JAX's own ``gammainc``/``gammaincc`` loop until every value has converged; the package's
(``_JaxSpecial._incomplete``) evaluate a fixed number of terms, which XLA fuses:

* ``P`` and ``Q`` within ``1e-12`` of SciPy's, relative, over every shape the package
  accepts (``[MIN_GAMMA_SHAPE, MAX_GAMMA_SHAPE]``) and every ``x`` from ``1e-300`` to
  ``1e3``, and exactly ``(0, 1)`` at ``x = 0`` and ``(1, 0)`` at ``x = ∞`` (a grid and
  Hypothesis);
* the same with the shape known when compiled (fewer terms for the package's shapes,
  ``1/a`` of a power kinetic energy);
* a known shape outside that range takes JAX's functions;
* the checks catch too short a series or continued fraction.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special as scipy_special

from ladder_mcmc import arrays
from ladder_mcmc.arrays import MAX_GAMMA_SHAPE, MIN_GAMMA_SHAPE, special

jax = pytest.importorskip("jax")
jnp = jax.numpy

TOLERANCE = 1e-12


@pytest.fixture(autouse=True)
def _x64():
    with jax.enable_x64(True):
        yield


def _pair(shape, x):
    return special(jnp)._incomplete(shape, x)


_COMPILED = jax.jit(_pair)


def _worst_errors(shape, x, pair=_COMPILED) -> tuple[float, float]:
    """The largest relative errors of ``P`` and ``Q`` against SciPy's (values SciPy puts
    below ``1e-290`` must be below ``1e-280``)."""
    shape, x = np.broadcast_arrays(np.asarray(shape, float), np.asarray(x, float))
    got = [np.asarray(v) for v in pair(jnp.asarray(shape), jnp.asarray(x))]
    wanted = (scipy_special.gammainc(shape, x), scipy_special.gammaincc(shape, x))
    worst = []
    for g, w in zip(got, wanted, strict=True):
        with np.errstate(all="ignore"):
            error = np.abs(g - w) / np.abs(w)
        error = np.where(np.abs(w) < 1e-290, np.where(np.abs(g) < 1e-280, 0.0, np.inf), error)
        error = np.where(g == w, 0.0, error)
        worst.append(float(np.max(error)))
    return worst[0], worst[1]


def _grid() -> tuple[np.ndarray, np.ndarray]:
    shapes = np.concatenate([np.linspace(MIN_GAMMA_SHAPE, MAX_GAMMA_SHAPE, 40), [0.5, 0.8, 1.0]])
    x = np.concatenate([np.logspace(-300, 3, 600), np.linspace(0.0, 12.0, 600)[1:]])
    return np.meshgrid(shapes, x, indexing="ij")


def test_p_and_q_match_scipy_over_every_accepted_shape():
    assert max(_worst_errors(*_grid())) <= TOLERANCE


@settings(max_examples=40, deadline=None)
@given(
    shape=st.floats(MIN_GAMMA_SHAPE, MAX_GAMMA_SHAPE),
    x=st.lists(
        st.one_of(
            st.floats(0.0, 50.0, allow_subnormal=False),
            st.floats(-300.0, 3.0).map(lambda e: 10.0**e),
        ),
        min_size=16,
        max_size=16,
    ),
)
def test_p_and_q_match_scipy_anywhere(shape, x):
    assert max(_worst_errors(shape, x)) <= TOLERANCE


def test_the_ends_are_exact():
    p, q = (np.asarray(v) for v in _COMPILED(jnp.full(2, 0.8), jnp.asarray([0.0, np.inf])))
    assert p.tolist() == [0.0, 1.0] and q.tolist() == [1.0, 0.0]


def test_a_shape_outside_the_range_takes_jaxs_functions():
    x = jnp.asarray([0.3, 2.0, 9.0])
    p, q = _pair(7.5, x)
    assert np.array_equal(p, jax.scipy.special.gammainc(7.5, x))
    assert np.array_equal(q, jax.scipy.special.gammaincc(7.5, x))


def _known(shape: float):
    """``_pair`` compiled with the shape known (a number, as the package's callers pass it:
    :data:`~ladder_mcmc.arrays.FEW_TERMS` terms for a shape in ``[0.5, 2]``)."""
    compiled = jax.jit(lambda x: _pair(shape, x))
    return lambda _shape, x: compiled(x)


_KNOWN_SHAPES = (0.5, 0.55, 0.8, 1.0, 1.25, 1.5, 2.0)


def test_p_and_q_match_scipy_for_the_package_s_known_shapes():
    x = _grid()[1][0]
    assert max(max(_worst_errors(a, x, pair=_known(a))) for a in _KNOWN_SHAPES) <= TOLERANCE


@pytest.mark.parametrize(
    "terms", [("SERIES_TERMS", 20), ("FRACTION_TERMS", 40), ("FEW_TERMS", (15, 25))]
)
def test_the_check_catches_too_few_terms(monkeypatch, terms):
    monkeypatch.setattr(arrays, *terms)
    if terms[0] == "FEW_TERMS":
        x = _grid()[1][0]
        worst = max(max(_worst_errors(a, x, pair=_known(a))) for a in _KNOWN_SHAPES)
    else:
        afresh = jax.jit(lambda *args: _pair(*args))  # traced anew, with the shorter sums
        worst = max(_worst_errors(*_grid(), pair=afresh))
    assert worst > TOLERANCE
