"""What the draws say: autocorrelation, effective sample size, R-hat, the rung table, checks.

The paper measures samplers by the autocorrelation of their draws against gradient
evaluations (figures 2 and 3: :func:`autocorrelation_vs_grads`,
:func:`grads_to_threshold`) and by the fraction of steps that take each rung or flip
(table 1: :func:`transition_table`). Around those: the multi-chain effective sample
size, R̂ and Monte Carlo standard errors of Stan and ArviZ (:func:`effective_sample_size`,
:func:`posterior_statistics`, :func:`summary`), the warnings a run that went bad
raises (:func:`check_trace`, :class:`SamplingWarning`), and the check of a target's
gradient against its energy (:func:`check_gradient`).
"""

from ladder_mcmc.diagnostics.autocorrelation import (
    autocorrelation,
    autocorrelation_vs_grads,
    grads_to_threshold,
)
from ladder_mcmc.diagnostics.checks import SamplingWarning, check_trace, trace_problems
from ladder_mcmc.diagnostics.energy import e_bfmi
from ladder_mcmc.diagnostics.ess import (
    effective_sample_size,
    ess_bulk,
    ess_tail,
    mcse_mean,
    mcse_sd,
    posterior_statistics,
    rank_rhat,
    split_rhat,
)
from ladder_mcmc.diagnostics.gradient import GradientCounter, check_gradient
from ladder_mcmc.diagnostics.rung_table import transition_table
from ladder_mcmc.diagnostics.summary import (
    Summary,
    min_bulk_ess,
    rank_normalize,
    summary,
    to_inference_data,
)

__all__ = [
    "GradientCounter",
    "SamplingWarning",
    "Summary",
    "autocorrelation",
    "autocorrelation_vs_grads",
    "check_gradient",
    "check_trace",
    "e_bfmi",
    "effective_sample_size",
    "ess_bulk",
    "ess_tail",
    "grads_to_threshold",
    "mcse_mean",
    "mcse_sd",
    "min_bulk_ess",
    "posterior_statistics",
    "rank_normalize",
    "rank_rhat",
    "split_rhat",
    "summary",
    "to_inference_data",
    "trace_problems",
    "transition_table",
]
