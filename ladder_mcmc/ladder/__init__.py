"""The abstract ladder: transition rules on the ladder of any reversible map.

In the paper's terms (sections 4 and 6): a reversible deterministic map ``L`` with its
flip ``F`` (:class:`ReversibleMap`, ``F L F = L⁻¹``) spans from a state ``ζ`` the
ladder of rungs ``L ζ, L² ζ, …``; a transition rule (:class:`Rule`, the paper's
look-ahead rule :class:`LookAheadRule` and others) moves each chain to a rung, flips
its direction ``d`` or leaves it where it is, keeping the extended target
``p(ζ, d) = p(ζ)/2`` invariant; a refresh (:class:`Refresh`) then moves the chain
off its ladder. :class:`Ladder` is the kernel made of the three. Nothing here is
Hamiltonian: any map on any state works (:class:`CycleShift`, the finite ladders of
:mod:`ladder_mcmc.verify`, :class:`LogScaleWalk`, which changes volume and declares its
Jacobian), and :mod:`ladder_mcmc.hamiltonian` is one instance. A map may carry a
parameter drawn from a law that depends on the state (:class:`AuxiliaryMap`,
:class:`AuxiliaryRefresh`: docs/design.md §14).
"""

from ladder_mcmc.ladder import batch
from ladder_mcmc.ladder.auxiliary import AuxiliaryLaw, AuxiliaryMap, AuxiliaryState, MapFamily
from ladder_mcmc.ladder.auxiliary_refresh import AuxiliaryRefresh, InnerRefresh
from ladder_mcmc.ladder.cycle import CycleShift
from ladder_mcmc.ladder.kernel import Ladder, LadderState, LookAhead, StepInfo
from ladder_mcmc.ladder.log_scale import LogScaleRefresh, LogScaleState, LogScaleWalk
from ladder_mcmc.ladder.maps import ReversibleMap
from ladder_mcmc.ladder.persistent_uniform import PersistentUniformRule
from ladder_mcmc.ladder.reduced_flip import ReducedFlipLookAheadRule, ReducedFlipRule
from ladder_mcmc.ladder.refresh import ComposedRefresh, DirectionRefresh, Refresh
from ladder_mcmc.ladder.rules import FLIP, STAY, LookAheadRule, Rule

__all__ = [
    "FLIP",
    "STAY",
    "AuxiliaryLaw",
    "AuxiliaryMap",
    "AuxiliaryRefresh",
    "AuxiliaryState",
    "ComposedRefresh",
    "CycleShift",
    "DirectionRefresh",
    "InnerRefresh",
    "Ladder",
    "LadderState",
    "LogScaleRefresh",
    "LogScaleState",
    "LogScaleWalk",
    "LookAhead",
    "LookAheadRule",
    "MapFamily",
    "PersistentUniformRule",
    "ReducedFlipLookAheadRule",
    "ReducedFlipRule",
    "Refresh",
    "ReversibleMap",
    "Rule",
    "StepInfo",
    "batch",
]
