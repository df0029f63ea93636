"""The warnings of a Hamiltonian warm-up: values left unadapted (``warmup=0``), and a
warm-up that ended badly (a tiny step, or half its last steps flipping)."""

from __future__ import annotations

import warnings
from typing import Any

from ladder_mcmc.hamiltonian.warmup.dual_averaging import MIN_STEP_SIZE
from ladder_mcmc.hamiltonian.warmup.parameters import current_beta
from ladder_mcmc.ladder.kernel import Ladder
from ladder_mcmc.validation import SamplingWarning, user_stacklevel

#: the shortest warm-up whose last quarter tells flips at the adapted step from the
#: excursions of dual averaging's iterates (shorter ones: the run's own checks tell)
MIN_FLIP_CHECK_WARMUP = 100


def warn_unadapted(kernel: Ladder) -> None:
    """Say that a kernel runs with starting values it meant warm-up to adapt."""
    # the identity mass is a natural default; a step, a length or a β of 1 is not
    names = ", ".join(sorted(set(kernel.adapt or ()) - {"inverse_mass"}))
    if not names:
        return
    described = kernel.map.describe()
    values = {"step_size": described.get("step_size"), "n_leapfrog": described.get("n_steps")}
    values["beta"] = current_beta(kernel)
    start = ", ".join(f"{n}={values[n]}" for n in sorted(values) if n in names)
    warnings.warn(
        f"warmup=0, but the kernel leaves {names} to adapt: it runs with their starting "
        f"values ({start}); pass warmup > 0 (the default), or give these values to the "
        "kernel",
        SamplingWarning,
        stacklevel=user_stacklevel(),
    )


def check_warmup(result: Any) -> None:
    """Warn (:class:`~ladder_mcmc.SamplingWarning`) of a warm-up that ended with half its
    last steps flipping or a step size below ``10⁻¹⁰`` (each group of a grouped one)."""
    for one in getattr(result, "groups", (result,)):
        _warn_if_bad(one)


def _warn_if_bad(result: Any) -> None:
    if result.step_size < MIN_STEP_SIZE:
        warnings.warn(
            f"warm-up ended with step size {result.step_size:.3g} < {MIN_STEP_SIZE:g}: the "
            "chains cannot move (a wrong gradient, a density that is not smooth, or a start "
            "far in the tails); check the target, or start the chains elsewhere",
            SamplingWarning,
            stacklevel=user_stacklevel(),
        )
    if result.flip_fraction >= 0.5 and result.n_steps >= MIN_FLIP_CHECK_WARMUP:
        warnings.warn(
            f"warm-up ended with {result.flip_fraction:.0%} of its last steps flipping: the "
            f"adapted kernel (ε={result.step_size:.3g}, M={result.n_leapfrog}) rarely moves; "
            "a longer warm-up, a dense mass (dense_mass=True) or a reparametrisation may help",
            SamplingWarning,
            stacklevel=user_stacklevel(),
        )


__all__ = ["MIN_FLIP_CHECK_WARMUP", "check_warmup", "warn_unadapted"]
