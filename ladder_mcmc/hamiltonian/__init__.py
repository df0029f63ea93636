"""Hamiltonian Monte Carlo as one instance of the ladder.

The map is the leapfrog integrator of Hamiltonian dynamics (:class:`Leapfrog`, the
paper's ``L(ε, M)`` of section 3.3.2) on the phase state ``ζ = (x, v)``
(:class:`PhaseState`), with the momentum flip as its ``F``; the refresh is the
partial momentum refresh ``R(β)`` (:class:`MomentumRefresh`, section 3.3.3); with
the look-ahead rule they make the paper's two samplers, :func:`hmc` and
:func:`lahmc` (sections 3.4 and 4). Around them: the kinetic energy
(:class:`KineticEnergy`, the interface; :class:`Metric`, the Gaussian momentum of a
mass matrix; :class:`PowerKinetic`), other symmetric integrators (:class:`Yoshida4`,
:class:`McLachlan2`), tempered, step-jittered and length-jittered leapfrogs, leapfrogs
whose length or step refinement is drawn from the state for multiscale targets
(:func:`state_length_lahmc`, :func:`refined_lahmc`, and :func:`span_lahmc`, its level
drawn from the gradient's size), the lifted quantile refresh of
:func:`lifted_lahmc`, and the exact flow of a harmonic oscillator.
"""

from ladder_mcmc.hamiltonian.gradient_level import GradientLevelLaw
from ladder_mcmc.hamiltonian.harmonic import HarmonicFlow
from ladder_mcmc.hamiltonian.integrators import McLachlan2, SymmetricSplitting, Yoshida4
from ladder_mcmc.hamiltonian.jitter import JitteredLeapfrog, JitteredPhaseState, StepSizeJitter
from ladder_mcmc.hamiltonian.jittered_length import (
    JitteredLengthLeapfrog,
    JitteredLengthState,
    LengthJitter,
)
from ladder_mcmc.hamiltonian.kinetic import KineticEnergy, PowerKinetic
from ladder_mcmc.hamiltonian.leapfrog import Leapfrog, PhaseState
from ladder_mcmc.hamiltonian.leapfrog_family import LeapfrogFamily
from ladder_mcmc.hamiltonian.lifted import (
    LiftedLeapfrog,
    LiftedPhaseState,
    LiftedQuantileRefresh,
    LiftResampleRefresh,
)
from ladder_mcmc.hamiltonian.metrics import Metric
from ladder_mcmc.hamiltonian.momentum import MomentumRefresh, NormalizedMomentumRefresh
from ladder_mcmc.hamiltonian.refined_step import RefinedLeapfrog, RefinementLaw, refined_lahmc
from ladder_mcmc.hamiltonian.samplers import hmc, lahmc, lifted_lahmc
from ladder_mcmc.hamiltonian.span_step import SpanLeapfrog, span_lahmc
from ladder_mcmc.hamiltonian.state_length import (
    LocalLengthLaw,
    StateLengthLeapfrog,
    state_length_lahmc,
)
from ladder_mcmc.hamiltonian.tempered import TemperedLeapfrog

__all__ = [
    "GradientLevelLaw",
    "HarmonicFlow",
    "JitteredLeapfrog",
    "JitteredLengthLeapfrog",
    "JitteredLengthState",
    "JitteredPhaseState",
    "KineticEnergy",
    "Leapfrog",
    "LeapfrogFamily",
    "LengthJitter",
    "LiftResampleRefresh",
    "LiftedLeapfrog",
    "LiftedPhaseState",
    "LiftedQuantileRefresh",
    "LocalLengthLaw",
    "McLachlan2",
    "Metric",
    "MomentumRefresh",
    "NormalizedMomentumRefresh",
    "PhaseState",
    "PowerKinetic",
    "RefinedLeapfrog",
    "RefinementLaw",
    "SpanLeapfrog",
    "StateLengthLeapfrog",
    "StepSizeJitter",
    "SymmetricSplitting",
    "TemperedLeapfrog",
    "Yoshida4",
    "hmc",
    "lahmc",
    "lifted_lahmc",
    "refined_lahmc",
    "span_lahmc",
    "state_length_lahmc",
]
