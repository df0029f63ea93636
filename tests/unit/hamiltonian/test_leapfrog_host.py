"""The leapfrog's host steps (float64 numpy arrays and a ``Metric``) write their results over
temporaries of their own: the values are those of the plain steps, bit for bit, and no
array they are given, nor one the target returns (here the positions themselves), is
changed."""

from __future__ import annotations

import numpy as np
import pytest

from ladder_mcmc.hamiltonian import Leapfrog, Metric
from ladder_mcmc.models import FunctionTarget

PRECISION = np.array([0.5, 2.0, 7.0])


def plain_move(x, v, g, d, eps, n, inverse_mass, grad):
    """``L^d`` written out as the textbook steps (merged inner kicks)."""
    vel = (lambda u: u) if inverse_mass is None else (lambda u: u * inverse_mass)
    d = d[:, None].astype(float)
    v = d * v
    v = v - (0.5 * eps) * g
    for _ in range(n - 1):
        x = x + eps * vel(v)
        v = v - eps * grad(x)
    x = x + eps * vel(v)
    g = grad(x)
    v = v - (0.5 * eps) * g
    return x, d * v, g


@pytest.mark.parametrize("inverse_mass", [None, np.array([1.5, 0.5, 0.25])])
@pytest.mark.parametrize("returns_its_input", [True, False])
def test_host_steps_are_the_plain_steps_and_write_to_nothing_given(inverse_mass, returns_its_input):
    if returns_its_input:  # the standard normal: the gradient is the positions themselves

        def grad(x):
            return x

        target = FunctionTarget(lambda x: 0.5 * (x * x).sum(1), grad, dim=3)
    else:
        cached = {}

        def grad(x):  # the same array returned to every caller with these positions
            key = x.tobytes()
            if key not in cached:
                cached[key] = x * PRECISION
            return cached[key]

        target = FunctionTarget(lambda x: 0.5 * (x * grad(x)).sum(1), grad, dim=3)
    leapfrog = Leapfrog(target, 0.3, 5, Metric(inverse_mass))
    state = leapfrog.prepare(
        np.random.default_rng(0).standard_normal((6, 3)), np.random.default_rng(1)
    )
    direction = np.array([1, -1, 1, -1, -1, 1], dtype=np.int8)
    before = [a.copy() for a in (state.x, state.v, state.grad)]
    returned = dict(cached) if not returns_its_input else {}
    out = leapfrog.move(state, direction)
    for a, b in zip((state.x, state.v, state.grad), before, strict=True):
        np.testing.assert_array_equal(a, b)
    for key, a in returned.items():  # what the target returned before is as it was
        np.testing.assert_array_equal(a, np.frombuffer(key).reshape(-1, 3) * PRECISION)
    x, v, g = plain_move(*before, direction, 0.3, 5, inverse_mass, grad)
    np.testing.assert_array_equal(out.x, x)
    np.testing.assert_array_equal(out.v, v)
    np.testing.assert_array_equal(out.grad, g)
    np.testing.assert_array_equal(out.energy, target.energy(x))
