"""ladder_mcmc: Markov chain Monte Carlo on the ladder of a reversible deterministic map.

Implements and generalises Look-Ahead HMC (Sohl-Dickstein, Mudigonda & DeWeese,
"Hamiltonian Monte Carlo Without Detailed Balance", ICML 2014).
"""

from ladder_mcmc.hmc import Leapfrog, PhaseState, hmc, lahmc
from ladder_mcmc.ladder import Ladder, LadderState, LookAhead, StepInfo
from ladder_mcmc.maps import ReversibleMap
from ladder_mcmc.metrics import Metric
from ladder_mcmc.refresh import ComposedRefresh, DirectionRefresh, MomentumRefresh, Refresh
from ladder_mcmc.rules import FLIP, STAY, LookAheadRule, Rule
from ladder_mcmc.sampling import sample
from ladder_mcmc.targets import FunctionTarget, Target
from ladder_mcmc.trace import Trace

__version__ = "0.1.0"

__all__ = [
    "FLIP",
    "STAY",
    "ComposedRefresh",
    "DirectionRefresh",
    "FunctionTarget",
    "Ladder",
    "LadderState",
    "Leapfrog",
    "LookAhead",
    "LookAheadRule",
    "Metric",
    "MomentumRefresh",
    "PhaseState",
    "Refresh",
    "ReversibleMap",
    "Rule",
    "StepInfo",
    "Target",
    "Trace",
    "hmc",
    "lahmc",
    "sample",
]
