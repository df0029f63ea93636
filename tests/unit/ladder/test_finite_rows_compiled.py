"""The compiled finiteness check of a state's rows (``ladder.kernel._finite_rows``, whose
rows are folded to 32 columns before the reduction so that XLA on CPU fuses it into one
operation) flags exactly the rows with a NaN or an infinity in any leaf, at any column,
for rows narrower and wider than the fold and beyond the widths it folds."""

from __future__ import annotations

import attrs
import numpy as np
import pytest

jax = pytest.importorskip("jax")

from ladder_mcmc.ladder.kernel import _finite_rows  # noqa: E402


@attrs.frozen
class _State:
    x: object
    v: object


@pytest.mark.parametrize("width", [1, 5, 32, 33, 64, 100, 1024, 1100])
def test_compiled_rows_flag_every_non_finite_entry(width):
    import jax.numpy as jnp

    rng = np.random.default_rng(width)
    chains = 6
    x = rng.normal(size=(chains, width))
    v = rng.normal(size=(chains, width))
    bad_rows = {1: (x, np.nan), 3: (v, np.inf), 4: (x, -np.inf)}
    for row, (leaf, value) in bad_rows.items():
        leaf[row, rng.integers(width)] = value
    v[5, width - 1] = np.nan  # the last column (padding of the fold)
    expected = np.ones(chains, dtype=bool)
    expected[[1, 3, 4, 5]] = False
    with jax.enable_x64(True):
        got = jax.jit(lambda a, b: _finite_rows(jnp, _State(a, b), None))(x, v)
    np.testing.assert_array_equal(np.asarray(got), expected)
