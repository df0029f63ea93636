"""Targets to sample: the paper's test densities, your own functions, real posteriors.

A target is an energy ``E(x) = -log p(x) + const`` with its gradient, for a batch of
positions (:class:`Target`, the interface; :class:`FunctionTarget` wraps two plain
functions). The paper's targets of section 5 are here — the ill-conditioned Gaussian
(:class:`IllConditionedGaussian`) and the rough well (:class:`RoughWell`), a Gamma law on
positive variables (:class:`GammaTarget`) and Neal's funnel (:class:`NealsFunnel`), a
multiscale target — and, in
:mod:`ladder_mcmc.models.posteriors`, seven real posteriors from posteriordb on
Stan's unconstrained scale.

Your own model: a log density in JAX (:func:`from_jax`), in PyMC
(:func:`from_pymc`) or PyTorch (:func:`from_torch`), each differentiated and batched
for you; or by hand, :class:`LogDensityTarget` (log density and its gradient) or
:class:`FunctionTarget` (energy and its gradient). A target may carry names, shapes
and a constraining transform (:class:`ParameterSpace`), which ``summary`` and
``to_inference_data`` use.
"""

from ladder_mcmc.models.adapters import CompiledTarget, from_jax, from_pymc, from_torch
from ladder_mcmc.models.exact_targets import (
    GammaTarget,
    IllConditionedGaussian,
    NealsFunnel,
    RoughWell,
)
from ladder_mcmc.models.parameters import ParameterSpace
from ladder_mcmc.models.targets import (
    FunctionTarget,
    LogDensityTarget,
    Target,
    energy_and_grad,
)

__all__ = [
    "CompiledTarget",
    "FunctionTarget",
    "GammaTarget",
    "IllConditionedGaussian",
    "LogDensityTarget",
    "NealsFunnel",
    "ParameterSpace",
    "RoughWell",
    "Target",
    "energy_and_grad",
    "from_jax",
    "from_pymc",
    "from_torch",
]
