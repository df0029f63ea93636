"""Transition rules on the ladder of states.

A rule decides, from the densities of the rungs it looks at, where a chain
moves: to a rung ``L^a ζ`` (code ``a ≥ 1``), to the flip ``(ζ, -d)`` (code
``0``), or nowhere (code ``-1``, "stay"). docs/design.md §3.3 fixes the reporting codes.

A rule is a short, static plan plus a little arithmetic:

* ``positions[s]`` — the rung (relative to the chain's direction, ``-1`` is
  ``L^{-d} ζ``) looked at in stage ``s``;
* ``outcomes[s]`` — the code taken when the chain stops at stage ``s``;
* ``fallthrough`` — the code taken when no stage stops the chain: ``FLIP``,
  ``STAY``, or a rung ``a ≥ 1``, which must be ``positions[-1]`` (the chain then
  moves to the rung its last stage computed);
* :meth:`Rule.update` — the cumulative probability ``C_s`` of stopping at or
  before stage ``s``, computed incrementally from the density ratio
  ``r_s = p(rung at positions[s]) / p(ζ)`` (times ``|det ∂(rung)/∂ζ|`` for a map
  that changes volume, docs/design.md §13) and one number of per-chain memory
  (``memory``, zero at the start of every step).

Sampling draws one uniform ``u`` per chain per step and stops at the first stage
with ``u < C_s`` — the greedy scheme of the paper (section 4.3): a rung is
computed only while the chain is undecided. The exact transition matrices of
``ladder_mcmc.verify.finite`` use the *same* :meth:`Rule.update` on rational numbers,
so the exact checks test the arithmetic that samples.

:meth:`Rule.update` (and :meth:`Rule.uniform`, :meth:`Rule.next_carry`) is written
against the namespace of its inputs (``xp = namespace(memory, ratio)``,
:mod:`ladder_mcmc.arrays`), so that it runs on numpy arrays, on JAX values inside the
compiled loop, and on numpy object arrays of :class:`fractions.Fraction` (whose
namespace is numpy): ``xp.minimum``, ``xp.maximum``, ``xp.where``, ``+``, ``-``,
``*``, ``/``; no Python branch on the values.
"""

from __future__ import annotations

import abc
from typing import Any

import attrs
import numpy as np

from ladder_mcmc.arrays import namespace
from ladder_mcmc.validation import attrs_converter, positive_int

FLIP = 0
"""Outcome code of the flip ``(ζ, d) → (ζ, -d)``."""
STAY = -1
"""Outcome code of staying put."""


class Rule(abc.ABC):
    """Abstract transition rule on the ladder (see the module docstring).

    The plan's contract (checked by :func:`ladder_mcmc.ladder.rules.check_rule` when a
    kernel is built): ``positions`` and ``outcomes`` are non-empty and of equal
    length; each position is one map application from the previous stage's rung
    or from the starting state; a rung code ``outcomes[s] = a ≥ 1`` equals
    ``positions[s]`` (the chain moves to the rung computed at that stage); and
    ``fallthrough`` is ``FLIP``, ``STAY`` or ``positions[-1]`` — a chain that no
    stage stops moves to the last computed rung. Both steps of the engine and the exact
    matrices of ``ladder_mcmc.verify.finite`` follow this contract.
    """

    positions: tuple[int, ...]
    outcomes: tuple[int, ...]
    fallthrough: int

    @abc.abstractmethod
    def update(
        self, memory: np.ndarray, stage: np.ndarray, ratio: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """One stage of the rule for a batch of chains.

        Parameters
        ----------
        memory : array (chains,)
            The rule's per-chain memory, zero at stage 0.
        stage : int array (chains,)
            The stage each chain is at (chains may be at different stages
            in the ragged step).
        ratio : array (chains,)
            ``p(ζ_s) / p(ζ)``, the density of the rung at ``positions[stage]``
            relative to the step's starting state (times the Jacobian
            ``|det ∂ζ_s/∂ζ|`` for a map that changes volume); ``0`` for density zero.

        Returns
        -------
        memory, cumulative : arrays (chains,)
            The new memory, and ``C_s``: the probability of having stopped at
            or before this stage. Non-decreasing in ``s``, at most 1.
        """

    @property
    def max_rung(self) -> int:
        """The largest rung code this rule can report."""
        return max([c for c in (*self.outcomes, self.fallthrough) if c > 0], default=0)

    @property
    def n_stages(self) -> int:
        return len(self.positions)

    # ---- the uniform: fresh per step unless a rule carries it (Neal 2020) ----
    def init_carry(self, n_chains: int, rng: np.random.Generator) -> Any:
        """Per-chain state carried between steps (in the kernel state); None here."""
        return None

    def uniform(self, carry: Any, rng: np.random.Generator, n: int) -> np.ndarray:
        """The uniform ``u ∈ [0, 1)`` of each chain for this step."""
        return rng.random(n)

    def next_carry(self, carry: Any, u: np.ndarray, code: np.ndarray, ratio: np.ndarray) -> Any:
        """Carry after a step that stopped with ``code``; ``ratio`` is the ratio of the
        stage taken (``p(ζ') / p(ζ)``, Jacobian included; 1 for no move)."""
        return carry

    def describe(self) -> dict:
        return {"rule": type(self).__name__, **attrs.asdict(self)}


@attrs.frozen
class LookAheadRule(Rule):
    """The look-ahead rule of LAHMC (Sohl-Dickstein, Mudigonda & DeWeese 2014).

    Paper, equation for ``π_{L^a}`` in section 4.3::

        π_a(ζ) = min[1 − Σ_{b<a} π_b(ζ),  p(F L^a ζ)/p(ζ) · (1 − Σ_{b<a} π_b(F L^a ζ))]
        π_F(ζ) = 1 − Σ_a π_a(ζ)

    computed in the closed form of its cumulative sum (docs/design.md §4; the "extra
    chances" rule of Campos & Sanz-Serna 2015)::

        C_a(ζ) = Σ_{b≤a} π_b(ζ) = min(1, max_{1≤j≤a} p(L^j ζ)/p(ζ)),

    a running maximum: O(1) per rung. The exact test suite checks the closed
    form against the recursion on random finite ladders. ``max_rungs = 1`` is
    Metropolis–Hastings with proposal ``F L`` (standard persistent HMC).

    Parameters
    ----------
    max_rungs : int
        ``K``, the largest number of map applications tried before flipping.
    """

    max_rungs: int = attrs.field(default=4, converter=attrs_converter(positive_int, "max_rungs"))

    @property
    def positions(self) -> tuple[int, ...]:  # type: ignore[override]
        return tuple(range(1, self.max_rungs + 1))

    @property
    def outcomes(self) -> tuple[int, ...]:  # type: ignore[override]
        return self.positions

    fallthrough = FLIP

    def update(self, memory, stage, ratio):
        xp = namespace(memory, ratio)
        running_max = xp.maximum(memory, ratio)
        return running_max, xp.minimum(1, running_max)


def base_for(positions: tuple[int, ...], stage: int) -> tuple[bool, int]:
    """Where stage ``stage``'s rung is computed from, and in which sign of ``d``.

    Returns ``(from_origin, sign)``: the rung at ``positions[stage]`` is
    ``L^{sign·d}`` applied to the previous stage's rung, or to the step's
    starting state if ``from_origin``.
    """
    prev = positions[stage - 1] if stage > 0 else 0
    pos = positions[stage]
    if pos - prev in (1, -1) and stage > 0:
        return False, pos - prev
    return True, pos


def check_rule(rule: Rule) -> None:
    """Validate a rule's static plan (each rung one map application away; a rung code is a
    position the rule computes at that stage, and a fall-through rung is ``positions[-1]``)."""
    pos = tuple(rule.positions)
    if len(pos) < 1 or len(rule.outcomes) != len(pos):
        raise ValueError(
            f"rule {type(rule).__name__}: positions {pos} and outcomes "
            f"{tuple(rule.outcomes)} must be non-empty and of equal length"
        )
    for s in range(len(pos)):
        from_origin, sign = base_for(pos, s)
        if from_origin and sign not in (1, -1):
            raise ValueError(
                f"rule {type(rule).__name__}: position {pos[s]} at stage {s} is not one "
                "map application from the previous rung or the starting state"
            )
        code = rule.outcomes[s]
        if code < STAY:
            raise ValueError(
                f"rule {type(rule).__name__}: stage {s} has outcome {code}; an outcome is a "
                "rung (≥ 1), FLIP (0) or STAY (-1)"
            )
        if code > 0 and code != pos[s]:
            raise ValueError(
                f"rule {type(rule).__name__}: stage {s} accepts rung {code} but computes "
                f"position {pos[s]}"
            )
    fall = rule.fallthrough
    if fall < STAY or (fall > 0 and fall != pos[-1]):
        raise ValueError(
            f"rule {type(rule).__name__}: fallthrough {fall} must be FLIP (0), STAY (-1) or "
            f"the rung its last stage computes, positions[-1] = {pos[-1]}"
        )
