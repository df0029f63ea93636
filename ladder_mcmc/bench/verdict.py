"""When a run has failed, whatever its z says.

A run **fails** if any of these holds (each a :class:`Failure` naming its rule):

* ``rhat``: the largest rank-normalised split R̂ is above :data:`RHAT_MAX` (1.01), or
  cannot be computed;
* ``frozen``: a chain is frozen — it never moved over its draws, or one of its
  coordinates never changed;
* ``step_size``: the step size after warm-up collapsed, below :data:`STEP_COLLAPSE`
  (10⁻⁶) times the median of the sampler's step sizes over the suite's models;
* ``warmup``: the warm-up said it went wrong (its adaptation's own check: a step size
  below 10⁻¹⁰, most of its last steps flipping);
* ``non_finite``: a draw is not finite;
* ``z``: a mean is more than :data:`Z_MAX` (5) standard errors from its reference, or
  the z cannot be computed;
* ``sd``: a standard deviation is more than :data:`Z_MAX` standard errors from its
  reference (the same rule as the means': a sampler of the wrong law — a tempered
  target, a biased refresh — can keep the means and miss the scale; each sd's MCSE from
  the reference's kurtosis, never the draws' own, docs/design.md §7.4), or the z cannot
  be computed;
* ``error``: the run raised;
* ``interrupted``: the run was cut short (Ctrl-C): it is not judged, and no other rule
  is reported.

A chain that never moves can show a small ``|z|`` (the reference's spread covers it) and
an R̂ of 10¹⁵: passing on z alone would hide it.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import numpy as np

from ladder_mcmc.bench.figures import Figures

RHAT_MAX = 1.01
"""Largest rank-normalised split R̂ of a passing run (Vehtari et al. 2021)."""
Z_MAX = 5.0
"""Largest ``|z|`` of a mean, or of a standard deviation, against its reference of a
passing run."""
STEP_COLLAPSE = 1e-6
"""A step size below this fraction of the median over models has collapsed."""
RULES = ("interrupted", "error", "non_finite", "frozen", "rhat", "step_size", "warmup", "z", "sd")
"""The rules, in the order a verdict lists its failures."""


@attrs.frozen
class Failure:
    """A rule a run broke: ``rule`` (one of :data:`RULES`) and what was seen."""

    rule: str
    message: str


@attrs.frozen
class Verdict:
    """Pass or fail, and why: ``failures`` (empty for a run that passed)."""

    failures: tuple[Failure, ...] = ()

    @property
    def passed(self) -> bool:
        """No rule broken."""
        return not self.failures

    @property
    def reasons(self) -> tuple[str, ...]:
        """What each failure saw, in words."""
        return tuple(f.message for f in self.failures)

    @property
    def rules(self) -> tuple[str, ...]:
        """The rules broken, each once, in :data:`RULES` order."""
        broken = {f.rule for f in self.failures}
        return tuple(r for r in RULES if r in broken)


def _chains(chains: Sequence[int]) -> str:
    shown = ", ".join(str(c) for c in chains[:8])
    return shown + (f", … ({len(chains) - 8} more)" if len(chains) > 8 else "")


def judge(
    figures: Figures,
    *,
    warmup_warnings: Sequence[str] = (),
    step_size: float | None = None,
    median_step_size: float | None = None,
    error: str | None = None,
    interrupted: bool = False,
) -> Verdict:
    """The verdict on a run with ``figures`` (see the module docstring).

    Parameters
    ----------
    figures : Figures
        The run's figures (only the convergence and accuracy ones are read).
    warmup_warnings : sequence of str
        What the run's warm-up said went wrong.
    step_size : float, optional
        The run's step size after warm-up.
    median_step_size : float, optional
        The median step size of the same sampler over the suite's models.
    error : str, optional
        The error the run raised, if it did.
    interrupted : bool
        The run was cut short: the verdict is that alone, whatever the figures.

    Examples
    --------
    >>> judge(Figures(max_rhat=1.002, max_abs_z=1.3, max_abs_z_sd=0.8)).passed
    True
    >>> v = judge(Figures(max_rhat=5.9e15, max_abs_z=3.3, frozen_chains=(0, 1, 2, 3)))
    >>> v.passed, v.rules
    (False, ('frozen', 'rhat'))
    """
    if interrupted:
        return Verdict((Failure("interrupted", "interrupted (Ctrl-C): not judged"),))
    out: list[Failure] = []
    if error is not None:
        out.append(Failure("error", f"the run raised {error}"))
    if figures.non_finite_draws:
        out.append(Failure("non_finite", f"{figures.non_finite_draws} non-finite draws"))
    if figures.frozen_chains:
        out.append(
            Failure(
                "frozen",
                f"{len(figures.frozen_chains)} frozen chains (chains "
                f"{_chains(figures.frozen_chains)}: a coordinate never changed)",
            )
        )
    explained = bool(out)  # R-hat and z are NaN after these; say so only once
    rhat = figures.max_rhat
    if rhat > RHAT_MAX:
        out.append(Failure("rhat", f"R-hat {rhat:.4g} > {RHAT_MAX}"))
    elif np.isnan(rhat) and not explained:
        out.append(Failure("rhat", "R-hat cannot be computed (too few draws or chains)"))
    if (
        step_size is not None
        and median_step_size is not None
        and np.isfinite(median_step_size)
        and step_size < STEP_COLLAPSE * median_step_size
    ):
        out.append(
            Failure(
                "step_size",
                f"step size {step_size:.3g} < {STEP_COLLAPSE:g} × the median over models "
                f"({median_step_size:.3g}): collapsed",
            )
        )
    out += [Failure("warmup", f"warm-up: {w}") for w in warmup_warnings]
    for rule, label, z, worst, of in (
        ("z", "|z|", figures.max_abs_z, figures.worst, "the means'"),
        ("sd", "sd |z|", figures.max_abs_z_sd, figures.worst_sd, "the standard deviations'"),
    ):  # one rule for the means and the sds
        if z > Z_MAX:
            where = f" ({worst})" if worst else ""
            out.append(Failure(rule, f"{label} {z:.3g} > {Z_MAX:g}{where}"))
        elif np.isnan(z) and not explained:
            out.append(Failure(rule, f"{of} z cannot be computed"))
    return Verdict(tuple(out))


def median_step_sizes(step_sizes: dict[str, Sequence[float | None]]) -> float | None:
    """The median over models of each model's median step size (``{model: step sizes of
    its runs}``, None for a run without one); None if no model has one."""
    per_model = [
        float(np.median(finite))
        for sizes in step_sizes.values()
        if (finite := [s for s in sizes if s is not None and np.isfinite(s) and s > 0])
    ]
    return float(np.median(per_model)) if per_model else None


__all__ = [
    "RHAT_MAX",
    "RULES",
    "STEP_COLLAPSE",
    "Z_MAX",
    "Failure",
    "Verdict",
    "judge",
    "median_step_sizes",
]
