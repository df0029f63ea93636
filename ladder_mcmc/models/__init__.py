"""Targets to sample: the paper's test densities, your own functions, real posteriors.

A target is an energy ``E(x) = -log p(x) + const`` with its gradient, for a batch of
positions (:class:`Target`, the interface; :class:`FunctionTarget` wraps two plain
functions). The paper's targets of section 5 are here — the ill-conditioned Gaussian
(:class:`IllConditionedGaussian`) and the rough well (:class:`RoughWell`) — and, in
:mod:`ladder_mcmc.models.posteriors`, seven real posteriors from posteriordb on
Stan's unconstrained scale.
"""

from ladder_mcmc.models.targets import (
    FunctionTarget,
    IllConditionedGaussian,
    RoughWell,
    Target,
    energy_and_grad,
)

__all__ = ["FunctionTarget", "IllConditionedGaussian", "RoughWell", "Target", "energy_and_grad"]
