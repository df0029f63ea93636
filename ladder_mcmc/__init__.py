"""ladder_mcmc: Markov chain Monte Carlo on the ladder of a reversible deterministic map.

Implements and generalises Look-Ahead HMC (Sohl-Dickstein, Mudigonda & DeWeese,
"Hamiltonian Monte Carlo Without Detailed Balance", ICML 2014).
"""

from ladder_mcmc.checks import SamplingWarning, check_gradient
from ladder_mcmc.cycle import CycleShift
from ladder_mcmc.harmonic import HarmonicFlow
from ladder_mcmc.hmc import Leapfrog, PhaseState, hmc, lahmc
from ladder_mcmc.integrators import McLachlan2, Yoshida4
from ladder_mcmc.jitter import JitteredLeapfrog, JitteredPhaseState, StepSizeJitter
from ladder_mcmc.kinetic import NormalizedMomentumRefresh, PowerKinetic
from ladder_mcmc.ladder import Ladder, LadderState, LookAhead, StepInfo
from ladder_mcmc.lifted_refresh import (
    LiftedLeapfrog,
    LiftedPhaseState,
    LiftedQuantileRefresh,
    LiftResampleRefresh,
    lifted_lahmc,
)
from ladder_mcmc.maps import ReversibleMap
from ladder_mcmc.metrics import Metric
from ladder_mcmc.persistent_uniform import PersistentUniformRule
from ladder_mcmc.reduced_flip import ReducedFlipLookAheadRule, ReducedFlipRule
from ladder_mcmc.refresh import ComposedRefresh, DirectionRefresh, MomentumRefresh, Refresh
from ladder_mcmc.rules import FLIP, STAY, LookAheadRule, Rule
from ladder_mcmc.sampling import resume, sample
from ladder_mcmc.targets import FunctionTarget, Target
from ladder_mcmc.tempered import TemperedLeapfrog
from ladder_mcmc.trace import Trace

__version__ = "0.1.0"

__all__ = [
    "FLIP",
    "STAY",
    "ComposedRefresh",
    "CycleShift",
    "DirectionRefresh",
    "FunctionTarget",
    "HarmonicFlow",
    "JitteredLeapfrog",
    "JitteredPhaseState",
    "Ladder",
    "LadderState",
    "Leapfrog",
    "LiftResampleRefresh",
    "LiftedLeapfrog",
    "LiftedPhaseState",
    "LiftedQuantileRefresh",
    "LookAhead",
    "LookAheadRule",
    "McLachlan2",
    "Metric",
    "MomentumRefresh",
    "NormalizedMomentumRefresh",
    "PersistentUniformRule",
    "PhaseState",
    "PowerKinetic",
    "ReducedFlipLookAheadRule",
    "ReducedFlipRule",
    "Refresh",
    "ReversibleMap",
    "Rule",
    "SamplingWarning",
    "StepInfo",
    "StepSizeJitter",
    "Target",
    "TemperedLeapfrog",
    "Trace",
    "Yoshida4",
    "check_gradient",
    "hmc",
    "lahmc",
    "lifted_lahmc",
    "resume",
    "sample",
]
