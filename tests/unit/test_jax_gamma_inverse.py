"""The inverse regularised incomplete gamma functions on JAX values (``arrays.special``).

* over every shape they accept, ``[MIN_GAMMA_SHAPE, MAX_GAMMA_SHAPE]``, and ``p`` in
  ``[2⁻⁵³, 1 − 2⁻⁵³]`` (tails drawn as ``2⁻ᵏ`` and ``1 − 2⁻ᵏ``), within ``1e-10`` of
  SciPy's, relative (Hypothesis, and a grid of shapes at once);
* issue 28's case, ``P⁻¹(0.1, 0.5422) = 1.34e-3``, and Gamma(0.1) draws of the JAX
  streams (``BlockView.gamma``) against the law (Kolmogorov–Smirnov);
* other shapes are refused with a ``ValueError`` naming ``shape``;
* the checks catch the old branch switch (the upper inversion down to ``q = ½`` for
  small shapes), which gave ``8.4e-14`` for ``P⁻¹(0.1, 0.5422)``.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special as scipy_special
from scipy import stats

from ladder_mcmc import arrays
from ladder_mcmc.arrays import MAX_GAMMA_SHAPE, MIN_GAMMA_SHAPE, inverse_gamma_tails, special

jax = pytest.importorskip("jax")
jnp = jax.numpy

TOLERANCE = 1e-10
TINY = 2.0**-53


@pytest.fixture(autouse=True)
def _x64():
    with jax.enable_x64(True):
        yield


def _inverses(shape, p, q):
    functions = special(jnp)
    return (
        functions.gammaincinv(shape, p),
        functions.gammainccinv(shape, p),
        inverse_gamma_tails(jnp, shape, p, q),
    )


#: compiled once per argument shape, the gamma shape traced (eight steps everywhere)
_COMPILED = jax.jit(_inverses)


def _relative_errors(shape, p, inverses=_COMPILED) -> np.ndarray:
    """Relative errors of ``gammaincinv(shape, p)``, ``gammainccinv(shape, p)`` and
    ``inverse_gamma_tails(shape, p, 1 − p)`` against SciPy's."""
    p = np.asarray(p, dtype=np.float64)
    q = 1.0 - p
    tails = np.where(
        p <= 0.5, scipy_special.gammaincinv(shape, p), scipy_special.gammainccinv(shape, q)
    )
    wanted = (scipy_special.gammaincinv(shape, p), scipy_special.gammainccinv(shape, p), tails)
    got = inverses(jnp.asarray(shape), jnp.asarray(p), jnp.asarray(q))
    return np.concatenate(
        [np.ravel(np.abs(np.asarray(g) - w) / w) for g, w in zip(got, wanted, strict=True)]
    )


tails = st.integers(1, 53).map(lambda k: 2.0**-k)
probabilities = st.one_of(
    st.floats(TINY, 1.0 - TINY),
    tails,
    tails.map(lambda t: 1.0 - t),
    st.floats(1.0, 53.0).map(lambda k: 2.0**-k),
    st.floats(1.0, 53.0).map(lambda k: 1.0 - 2.0**-k),
)


@settings(max_examples=60, deadline=None)
@given(
    shape=st.floats(MIN_GAMMA_SHAPE, MAX_GAMMA_SHAPE),
    p=st.lists(probabilities, min_size=16, max_size=16),
)
def test_the_inverses_match_scipy_over_every_accepted_shape(shape, p):
    assert np.all(_relative_errors(shape, p) <= TOLERANCE)


def _grid(low=MIN_GAMMA_SHAPE, high=MAX_GAMMA_SHAPE) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(28)
    k = np.arange(1, 54, dtype=np.float64)
    p = np.concatenate([2.0**-k, 1.0 - 2.0**-k, rng.random(60), [0.5422, 0.5, 0.95]])
    ends = [s for s in (MIN_GAMMA_SHAPE, 0.1, np.nextafter(0.5, 0.0), 0.5, 2.0, 5.0)]
    shapes = np.concatenate(
        [
            np.exp(rng.uniform(np.log(low), np.log(high), 12)),
            [s for s in ends if low <= s <= high],
        ]
    )
    return np.meshgrid(shapes, p, indexing="ij")


@pytest.mark.slow
def test_the_inverses_match_scipy_on_a_grid_of_shapes_and_tails():
    shapes, p = _grid()
    errors = _relative_errors(shapes, p)
    assert np.all(errors <= TOLERANCE), np.nanmax(errors)
    # the package's shapes, known on the host: four Newton steps (``_steps``), not traced
    shapes, p = _grid(0.5, 2.0)
    errors = _relative_errors(shapes, p, inverses=_inverses)
    assert np.all(errors <= TOLERANCE), np.nanmax(errors)


def test_issue_28s_case_is_right():
    # compiled: evaluated eagerly, the iterations dispatch op by op (seconds)
    got = float(jax.jit(lambda q: special(jnp).gammaincinv(0.1, q))(jnp.asarray(0.5422)))
    want = float(scipy_special.gammaincinv(0.1, 0.5422))
    assert want == pytest.approx(1.34e-3, rel=1e-2)
    assert abs(got - want) <= TOLERANCE * want
    # a package's shape (1/a of a power kinetic energy), known on the host: four steps
    k = np.arange(1.0, 54.0, 4.0)
    p = np.concatenate([2.0**-k, 1.0 - 2.0**-k, [0.3, 0.5422, 0.7]])
    got = np.asarray(jax.jit(lambda q: special(jnp).gammaincinv(0.8, q))(jnp.asarray(p)))
    want = scipy_special.gammaincinv(0.8, p)
    assert np.all(np.abs(got - want) <= TOLERANCE * want)


def _jax_gamma_draws(shape: float, chains: int = 4, per_chain: int = 5000) -> np.ndarray:
    """``rng.gamma(shape)`` of the JAX loop's streams (``BlockView``), from fixed uniforms."""
    from ladder_mcmc.engine.block_draws import BlockDraws

    def draw(u):  # compiled afresh for every call: it reads the module's constants now
        block = BlockDraws(u, jnp.zeros((chains, 1)), jnp.zeros((chains, 2), int))
        return block.view(None).gamma(shape, size=(chains, per_chain))

    u = np.random.default_rng(7).random((chains, per_chain))
    return np.asarray(jax.jit(draw)(jnp.asarray(u))).ravel()


def test_gamma_draws_of_the_jax_streams_follow_the_law():
    draws = _jax_gamma_draws(0.1)
    # a fixed seed; the test's false alarm rate is 1e-4
    assert stats.kstest(draws, stats.gamma(0.1).cdf).pvalue > 1e-4


@pytest.mark.parametrize("shape", [MIN_GAMMA_SHAPE / 2, 0.0, -1.0, MAX_GAMMA_SHAPE * 1.1, np.nan])
def test_shapes_outside_the_checked_range_are_refused(shape):
    functions = special(jnp)
    for inverse in (functions.gammaincinv, functions.gammainccinv):
        with pytest.raises(ValueError, match=r"^shape must be in .*got"):
            inverse(shape, jnp.asarray([0.3]))
    with pytest.raises(ValueError, match=r"^shape must be in"):
        inverse_gamma_tails(jnp, shape, jnp.asarray([0.3]), jnp.asarray([0.7]))
    with pytest.raises(ValueError, match=r"^shape must be in"):
        _jax_gamma_draws(shape, per_chain=3)


@pytest.mark.slow
def test_the_checks_catch_the_old_branch_switch(monkeypatch):
    """With the upper inversion used for every ``q ≤ ½`` (the old switch), issue 28's case,
    the comparison with SciPy and the draws' law all fail."""
    monkeypatch.setattr(arrays, "SMALL_SHAPE", 0.0)
    # compiled: evaluated eagerly, the iterations dispatch op by op (seconds)
    got = float(jax.jit(lambda q: special(jnp).gammaincinv(0.1, q))(jnp.asarray(0.5422)))
    assert abs(got - scipy_special.gammaincinv(0.1, 0.5422)) > 0.5 * 1.34e-3
    afresh = jax.jit(lambda *args: _inverses(*args))  # a new function: traced anew
    p = np.linspace(0.5, 0.6, 16)
    assert not np.all(_relative_errors(0.1, p, inverses=afresh) <= TOLERANCE)
    assert stats.kstest(_jax_gamma_draws(0.1), stats.gamma(0.1).cdf).pvalue < 1e-4
