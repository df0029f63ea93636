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
  ``r_s = p(rung at positions[s]) / p(ζ)`` and one number of per-chain memory
  (``memory``, zero at the start of every step).

Sampling draws one uniform ``u`` per chain per step and stops at the first stage
with ``u < C_s`` — the greedy scheme of the paper (section 4.3): a rung is
computed only while the chain is undecided. The exact transition matrices of
``ladder_mcmc.finite`` use the *same* :meth:`Rule.update` on rational numbers,
so the exact checks test the arithmetic that samples.

:meth:`Rule.update` must be written with operations that also work on numpy
object arrays of :class:`fractions.Fraction` (``np.minimum``, ``np.maximum``,
``np.where``, ``+``, ``-``, ``*``, ``/``).
"""

from __future__ import annotations

import abc
from typing import Any

import attrs
import numpy as np

from ladder_mcmc.validation import attrs_converter, positive_int

FLIP = 0
"""Outcome code of the flip ``(ζ, d) → (ζ, -d)``."""
STAY = -1
"""Outcome code of staying put."""


class Rule(abc.ABC):
    """Abstract transition rule on the ladder (see the module docstring).

    The plan's contract (checked by :func:`ladder_mcmc.ladder.check_rule` when a
    kernel is built): ``positions`` and ``outcomes`` are non-empty and of equal
    length; each position is one map application from the previous stage's rung
    or from the starting state; a rung code ``outcomes[s] = a ≥ 1`` equals
    ``positions[s]`` (the chain moves to the rung computed at that stage); and
    ``fallthrough`` is ``FLIP``, ``STAY`` or ``positions[-1]`` — a chain that no
    stage stops moves to the last computed rung. Every driver and the exact
    matrices of ``ladder_mcmc.finite`` follow this contract.
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
            under the ragged driver).
        ratio : array (chains,)
            ``p(ζ_s) / p(ζ)``, the density of the rung at ``positions[stage]``
            relative to the step's starting state; ``0`` for density zero.

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
        """Carry after a step that stopped with ``code``; ``ratio = p(ζ') / p(ζ)``."""
        return carry

    def describe(self) -> dict:
        return {"rule": type(self).__name__, **attrs.asdict(self)}

    @property
    def look_ahead_rungs(self) -> int | None:
        """Declared capability: ``K`` if this rule is exactly :class:`LookAheadRule` ``(K)``.

        (A fresh uniform per step, rungs ``1..K``, flip otherwise; the leapfrog
        look-ahead driver runs on it.) ``None`` here: declares nothing.
        """
        return None


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
    def look_ahead_rungs(self) -> int | None:
        """``K``: declared by this class only (a subclass that does not define
        ``look_ahead_rungs`` itself declares nothing)."""
        return int(self.max_rungs)

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if "look_ahead_rungs" not in vars(cls):
            cls.look_ahead_rungs = Rule.look_ahead_rungs

    @property
    def positions(self) -> tuple[int, ...]:  # type: ignore[override]
        return tuple(range(1, self.max_rungs + 1))

    @property
    def outcomes(self) -> tuple[int, ...]:  # type: ignore[override]
        return self.positions

    fallthrough = FLIP

    def update(self, memory, stage, ratio):
        running_max = np.maximum(memory, ratio)
        return running_max, np.minimum(1, running_max)


# ---- further rules, each in its own module, re-exported here (lazily, so that
# importing either module first works: they import Rule from this one) ----
_MORE_RULES = {
    "ReducedFlipRule": "ladder_mcmc.reduced_flip",
    "ReducedFlipLookAheadRule": "ladder_mcmc.reduced_flip",
    "PersistentUniformRule": "ladder_mcmc.persistent_uniform",
}


def __getattr__(name: str):
    """``from ladder_mcmc.rules import ReducedFlipRule`` etc. (PEP 562)."""
    module = _MORE_RULES.get(name)
    if module is None:
        raise AttributeError(f"module 'ladder_mcmc.rules' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
