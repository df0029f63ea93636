"""The host wrappers of a target's methods (``gradient``, ``energy_and_grad``): float64
arrays of the right shapes, whatever the target returns, or a ``ValueError`` naming the
target and the shapes (a gradient of the wrong shape, even on a later call)."""

from __future__ import annotations

import numpy as np
import pytest

from ladder_mcmc.models import FunctionTarget
from ladder_mcmc.models.targets import energy_and_grad, gradient

X = np.array([[0.5, -1.0], [2.0, 0.25]])


class Both:
    """A target with ``energy_and_grad``, returning what it is given."""

    def __init__(self, convert):
        self.convert = convert

    def energy(self, x):
        return self.convert(0.5 * (x**2).sum(1))

    def grad(self, x):
        return self.convert(x)

    def energy_and_grad(self, x):
        return self.energy(x), self.grad(x)


@pytest.mark.parametrize(
    "convert", [lambda a: a, lambda a: a.astype(np.float32), lambda a: a.tolist(),
                lambda a: a.astype(">f8")],
    ids=["float64", "float32", "list", "big-endian"],
)  # fmt: skip
def test_whatever_a_target_returns_comes_back_as_float64(convert):
    for target in (Both(convert), FunctionTarget(Both(convert).energy, convert)):
        g = gradient(target, X)
        e, g2 = energy_and_grad(target, X)
        for a in (g, e, g2):
            assert type(a) is np.ndarray and a.dtype == np.float64 and a.dtype.isnative
        np.testing.assert_array_equal(g, np.asarray(convert(X), dtype=float))
        np.testing.assert_array_equal(g2, g)
        np.testing.assert_array_equal(e, np.asarray(convert(0.5 * (X**2).sum(1)), dtype=float))


def test_shapes_are_checked_on_every_call():
    calls = []

    def grad(x):
        calls.append(1)
        return x if len(calls) < 3 else x[:, :1]  # right twice, then wrong

    target = FunctionTarget(lambda x: 0.5 * (x**2).sum(1), grad, dim=2)
    gradient(target, X)
    energy_and_grad(target, X)
    with pytest.raises(ValueError, match=r"FunctionTarget returned gradient of shape \(2, 1\)"):
        gradient(target, X)
    with pytest.raises(ValueError, match=r"returned energy of shape \(1,\)"):
        energy_and_grad(FunctionTarget(lambda x: np.zeros(1), lambda x: x), X)
