"""ladder_mcmc: Markov chain Monte Carlo on the ladder of a reversible deterministic map.

Implements and generalises Look-Ahead HMC (Sohl-Dickstein, Mudigonda & DeWeese,
"Hamiltonian Monte Carlo Without Detailed Balance", ICML 2014).

The package is a house of seven rooms, each a subpackage:

* :mod:`ladder_mcmc.ladder` — the abstract ladder: reversible maps, transition
  rules, refreshes, and the kernel made of them (nothing Hamiltonian);
* :mod:`ladder_mcmc.hamiltonian` — HMC as one instance of it: the leapfrog map,
  kinetic energies, momentum refreshes, and the samplers ``hmc`` and ``lahmc``;
* :mod:`ladder_mcmc.engine` — how steps are run: the ragged step written once, its
  numpy and JAX loops, the backend's choice, per-chain random streams, warm-up's runner;
* :mod:`ladder_mcmc.run` — running chains: ``sample``, ``resume``, the trace,
  warm-up, checkpoints, executors;
* :mod:`ladder_mcmc.diagnostics` — what the draws say: autocorrelation, ESS, R̂,
  the rung table, the checks of a run;
* :mod:`ladder_mcmc.verify` — exact and property-based verification;
* :mod:`ladder_mcmc.models` — targets to sample, and real posteriors;

and :mod:`ladder_mcmc.paper` reproduces the paper's experiments. Everything most
users need is importable from here.
"""

from ladder_mcmc.diagnostics.checks import SamplingWarning
from ladder_mcmc.diagnostics.gradient import check_gradient
from ladder_mcmc.engine.streams import ChainStreams
from ladder_mcmc.hamiltonian.harmonic import HarmonicFlow
from ladder_mcmc.hamiltonian.integrators import McLachlan2, Yoshida4
from ladder_mcmc.hamiltonian.jitter import JitteredLeapfrog, JitteredPhaseState, StepSizeJitter
from ladder_mcmc.hamiltonian.jittered_length import (
    JitteredLengthLeapfrog,
    JitteredLengthState,
    LengthJitter,
)
from ladder_mcmc.hamiltonian.kinetic import PowerKinetic
from ladder_mcmc.hamiltonian.leapfrog import Leapfrog, PhaseState
from ladder_mcmc.hamiltonian.lifted import (
    LiftedLeapfrog,
    LiftedPhaseState,
    LiftedQuantileRefresh,
    LiftResampleRefresh,
)
from ladder_mcmc.hamiltonian.metrics import Metric
from ladder_mcmc.hamiltonian.momentum import MomentumRefresh, NormalizedMomentumRefresh
from ladder_mcmc.hamiltonian.samplers import hmc, lahmc, lifted_lahmc
from ladder_mcmc.hamiltonian.tempered import TemperedLeapfrog
from ladder_mcmc.hamiltonian.warmup.parameters import apply_warmup
from ladder_mcmc.ladder.cycle import CycleShift
from ladder_mcmc.ladder.kernel import Ladder, LadderState, LookAhead, StepInfo
from ladder_mcmc.ladder.maps import ReversibleMap
from ladder_mcmc.ladder.persistent_uniform import PersistentUniformRule
from ladder_mcmc.ladder.reduced_flip import ReducedFlipLookAheadRule, ReducedFlipRule
from ladder_mcmc.ladder.refresh import ComposedRefresh, DirectionRefresh, Refresh
from ladder_mcmc.ladder.rules import FLIP, STAY, LookAheadRule, Rule
from ladder_mcmc.models.targets import FunctionTarget, Target
from ladder_mcmc.run.resume import resume
from ladder_mcmc.run.sample import sample
from ladder_mcmc.run.trace import Trace

__version__ = "0.1.0"

__all__ = [
    "apply_warmup",
    "FLIP",
    "STAY",
    "ChainStreams",
    "ComposedRefresh",
    "CycleShift",
    "DirectionRefresh",
    "FunctionTarget",
    "HarmonicFlow",
    "JitteredLeapfrog",
    "JitteredLengthLeapfrog",
    "JitteredLengthState",
    "JitteredPhaseState",
    "Ladder",
    "LadderState",
    "Leapfrog",
    "LengthJitter",
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
