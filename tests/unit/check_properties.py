"""Properties the run checks must have, as functions of the check, so that the mutation
tests (``tests/mutation/test_mutants.py``) can show them failing on broken variants.

Each ``assert_*`` raises ``AssertionError`` when the check given misses what it must see.
"""

from __future__ import annotations

import numpy as np

from ladder_mcmc.models import FunctionTarget, IllConditionedGaussian


def scale_case(seed: int = 0) -> np.ndarray:
    """Three N(0, 1) chains and one N(0, 25) chain, 1000 steps: same location, other scale.

    ArviZ's rank-normalised R-hat is about 1.25 here; the bulk part alone (and the
    plain split R-hat) about 1.00.
    """
    x = np.random.default_rng(seed).standard_normal((1000, 4))
    x[:, 3] *= 5.0
    return x


def assert_rhat_flags_different_scales(rhat) -> None:
    """``rhat(draws (steps, chains)) -> float`` flags chains that differ only in scale."""
    healthy = float(rhat(np.random.default_rng(1).standard_normal((1000, 4))))
    assert healthy < 1.01, f"R-hat {healthy} on four independent N(0, 1) chains"
    for seed in range(3):
        r = float(rhat(scale_case(seed)))
        assert r > 1.2, f"R-hat {r} misses 3 N(0, 1) chains and one N(0, 25) (seed {seed})"


def wrong_gradients() -> dict[str, tuple[FunctionTarget, np.ndarray]]:
    """Targets with a clearly wrong gradient, and points at which to check them."""
    gauss = IllConditionedGaussian(3, log_condition=2)
    x = np.random.default_rng(0).uniform(-2, 2, size=(4, 3)) * np.sqrt(gauss.variances)

    def bumpy_energy(y):  # E = |y|²/2 + Σ log(1 + y_i²)
        return 0.5 * (y * y).sum(axis=1) + np.log1p(y * y).sum(axis=1)

    return {
        "wrong sign": (FunctionTarget(gauss.energy, lambda y: -gauss.grad(y), dim=3), x),
        "factor 2": (FunctionTarget(gauss.energy, lambda y: 2.0 * gauss.grad(y), dim=3), x),
        "coordinates swapped": (
            FunctionTarget(gauss.energy, lambda y: gauss.grad(y)[:, [2, 1, 0]], dim=3),
            x,
        ),
        "missing term": (FunctionTarget(bumpy_energy, lambda y: y, dim=3), x),
    }


def assert_wrong_gradients_refused(check) -> None:
    """``check(target, x)`` raises ``ValueError`` for each of :func:`wrong_gradients`."""
    missed = []
    for name, (target, x) in wrong_gradients().items():
        try:
            check(target, x)
        except ValueError:
            continue
        missed.append(name)
    assert not missed, f"gradient check passed wrong gradients: {missed}"
