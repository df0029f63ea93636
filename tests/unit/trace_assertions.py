"""Shared assertion for tests that compare two runs bit for bit (imported by basename)."""

from __future__ import annotations

import numpy as np


def assert_same_run(a, b) -> None:
    """Two traces hold the same draws, rung codes, map applications and final kernel state."""
    np.testing.assert_array_equal(a.positions, b.positions)
    np.testing.assert_array_equal(a.rungs, b.rungs)
    np.testing.assert_array_equal(a.n_moves, b.n_moves)
    np.testing.assert_array_equal(a.non_finite_rungs, b.non_finite_rungs)
    for field in ("x", "v", "energy", "grad"):
        np.testing.assert_array_equal(getattr(a.final.state, field), getattr(b.final.state, field))
    np.testing.assert_array_equal(a.final.direction, b.final.direction)
    np.testing.assert_array_equal(a.final.log_density, b.final.log_density)
