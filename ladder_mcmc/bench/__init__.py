"""A benchmark suite: any kernel on every model with reference moments, NUTS beside it.

What a researcher with a new rule or map runs first. :func:`run_suite` runs a kernel
factory ``target -> kernel`` (default :func:`~ladder_mcmc.lahmc`) on the models of
:data:`SUITE` — every bundled posteriordb posterior, the paper's targets, Neal's funnel,
centred eight schools — and reports per model ESS per 1000 gradient evaluations (sampling
alone, and with warm-up), ESS per second, R̂, and the means' errors against reference
moments, with NumPyro's NUTS beside it if asked (:mod:`~ladder_mcmc.bench.nuts`). Each
run passes or fails by the rules of :mod:`~ladder_mcmc.bench.verdict`;
:func:`to_json` and :func:`markdown` write the result. ``ladder-mcmc bench`` runs it
from the command line.

Examples
--------
>>> from ladder_mcmc.bench import markdown, run_suite
>>> result = run_suite(models=["gauss2"], seeds=0, chains=2, warmup=100, draws=100)
>>> print(markdown(result))  # doctest: +ELLIPSIS
# Benchmark suite: lahmc, 2 chains × (100 warm-up + 100 draws), seeds 0
...
"""

from ladder_mcmc.bench.figures import Figures, figures_of, frozen_chains
from ladder_mcmc.bench.jax_densities import jax_log_density
from ladder_mcmc.bench.moments import Moments
from ladder_mcmc.bench.nuts import NutsSettings, nuts_version, run_nuts
from ladder_mcmc.bench.registry import SUITE, SuiteModel, get_model, model_names
from ladder_mcmc.bench.report import markdown, summary_rows, to_json
from ladder_mcmc.bench.runs import SamplerRun, run_kernel
from ladder_mcmc.bench.suite import RunResult, SuiteResult, SuiteSettings, run_suite
from ladder_mcmc.bench.verdict import RHAT_MAX, STEP_COLLAPSE, Z_MAX, Failure, Verdict, judge

__all__ = [
    "RHAT_MAX",
    "STEP_COLLAPSE",
    "SUITE",
    "Z_MAX",
    "Failure",
    "Figures",
    "Moments",
    "NutsSettings",
    "RunResult",
    "SamplerRun",
    "SuiteModel",
    "SuiteResult",
    "SuiteSettings",
    "Verdict",
    "figures_of",
    "frozen_chains",
    "get_model",
    "jax_log_density",
    "judge",
    "markdown",
    "model_names",
    "nuts_version",
    "run_kernel",
    "run_nuts",
    "run_suite",
    "summary_rows",
    "to_json",
]
