"""Reduced momentum flips: stay put instead of flipping wherever the fixed point allows.

Sohl-Dickstein (2012), "Hamiltonian Monte Carlo with Reduced Momentum Flips"
(arXiv:1205.1939): keep the *net* probability flow between ``(ζ, d)`` and
``(ζ, -d)`` but make it zero in one direction. With the rung probabilities of a
rule that satisfies generalized detailed balance on its rungs, the flip
probability ``π⁰_F`` may be replaced by

    π_F(ζ) = max(0, π⁰_F(ζ) − π⁰_F(Fζ)),     stay with probability π⁰_F(ζ) − π_F(ζ),

since the fixed point only needs ``π_F(ζ) − π_F(Fζ) = π⁰_F(ζ) − π⁰_F(Fζ)``
(docs/design.md §5.1). ``π⁰_F(Fζ)`` needs the rungs *behind* the chain (``F L^j F =
L^{-j}``), so the backward rungs are computed — and their gradients count —
but only for chains that would otherwise have flipped.

For the look-ahead rule ``π⁰_F = 1 − C_K`` and the cumulative probability of
leaving ``(ζ, d)`` becomes ``max(C_K(ζ), C_K(Fζ)) = min(1, max_{0<|j|≤K} p(L^j ζ)/p(ζ))``:
the running maximum of LAHMC continued over the backward rungs. ``K = 1`` is the
rule of the 2012 note, ``π_F(ζ) = max(0, π_L(Fζ) − π_L(ζ))``.
"""

from __future__ import annotations

import attrs

from ladder_mcmc.arrays import namespace
from ladder_mcmc.ladder.rules import FLIP, STAY, Rule
from ladder_mcmc.validation import attrs_converter, positive_int


@attrs.frozen
class ReducedFlipLookAheadRule(Rule):
    """Look-ahead with reduced flips: LAHMC's rungs, then stay instead of most flips.

    From ``(ζ, d)`` with forward rungs ``ζ_a = L^{ad} ζ`` and backward rungs
    ``ζ_{-j} = L^{-jd} ζ``:

    * rung ``a ≤ K`` with LAHMC's probability ``π_a`` (paper, section 4.3;
      cumulative ``C_a = min(1, max_{j≤a} p(ζ_j)/p(ζ))``);
    * flip with probability ``max(0, C_K(Fζ) − C_K(ζ))``, where
      ``C_K(Fζ) = min(1, max_{j≤K} p(ζ_{-j})/p(ζ))``;
    * stay put (code ``-1``) otherwise.

    The flip probability is never larger than LAHMC's ``1 − C_K(ζ)``. The
    construction is the one of Sohl-Dickstein (2012, arXiv:1205.1939) applied
    to the look-ahead rule's flip probability (the 2012 note treats ``K = 1``;
    we know of no publication of the ``K > 1`` combination — it is verified
    exactly by ``tests/exact/test_rules_exact.py``). Generalized detailed
    balance (``p(a) T(a→b) = p(Fb) T(Fb→Fa)`` on the extended space) holds:
    rung moves are LAHMC's, and the stay probability ``1 − max(C_K(ζ), C_K(Fζ))``
    is the same at ``(ζ, d)`` and ``(ζ, -d)``.

    Cost: a chain that passes all ``K`` forward rungs computes up to ``K``
    backward rungs (``2K`` map applications in the worst case, against ``K``
    for LAHMC).

    Parameters
    ----------
    max_rungs : int
        ``K ≥ 1``, forward rungs tried (and backward rungs looked at).

    References
    ----------
    J. Sohl-Dickstein (2012), Hamiltonian Monte Carlo with reduced momentum
    flips, arXiv:1205.1939. J. Sohl-Dickstein, M. Mudigonda, M. DeWeese (2014),
    Hamiltonian Monte Carlo without detailed balance, ICML (sections 4, 6).

    Examples
    --------
    >>> rule = ReducedFlipLookAheadRule(2)
    >>> rule.positions, rule.outcomes, rule.fallthrough
    ((1, 2, -1, -2), (1, 2, 0, 0), -1)
    """

    max_rungs: int = attrs.field(default=4, converter=attrs_converter(positive_int, "max_rungs"))

    @property
    def positions(self) -> tuple[int, ...]:  # type: ignore[override]
        k = self.max_rungs
        return tuple(range(1, k + 1)) + tuple(range(-1, -k - 1, -1))

    @property
    def outcomes(self) -> tuple[int, ...]:  # type: ignore[override]
        return tuple(range(1, self.max_rungs + 1)) + (FLIP,) * self.max_rungs

    fallthrough = STAY

    def update(self, memory, stage, ratio):
        # C = min(1, running max of p(rung)/p(ζ)) over forward then backward rungs:
        # forward stages give LAHMC's C_a; backward stage j gives
        # max(C_K(ζ), min(1, max_{i≤j} r_{-i})), so the flip takes
        # max(0, C_K(Fζ) − C_K(ζ)) in total.
        xp = namespace(memory, ratio)
        running_max = xp.maximum(memory, ratio)
        return running_max, xp.minimum(1, running_max)


@attrs.frozen
class ReducedFlipRule(ReducedFlipLookAheadRule):
    """Reduced momentum flips with one rung (Sohl-Dickstein 2012, arXiv:1205.1939).

    ``π_L(ζ) = min(1, p(Lζ)/p(ζ))``, ``π_F(ζ) = max(0, π_L(Fζ) − π_L(ζ))`` with
    ``π_L(Fζ) = min(1, p(L⁻¹ζ)/p(ζ))`` (the backward rung, computed only when
    the forward rung is rejected), stay with the rest (code ``-1``). The flip
    probability is at most Metropolis' ``1 − π_L(ζ)``; the forward move is
    Metropolis'. In the Rule interface: positions ``(1, -1)``, outcomes
    ``(1, FLIP)``, fallthrough ``STAY``; the cumulative probability at stage 1
    is ``max(C_0, min(1, r_{-1}))``.

    References
    ----------
    J. Sohl-Dickstein (2012), Hamiltonian Monte Carlo with reduced momentum
    flips, arXiv:1205.1939, section 3.

    Examples
    --------
    >>> import numpy as np
    >>> rule = ReducedFlipRule()
    >>> rule.positions, rule.outcomes, rule.fallthrough
    ((1, -1), (1, 0), -1)
    >>> mem, c0 = rule.update(np.zeros(1), np.array([0]), np.array([0.25]))
    >>> mem, c1 = rule.update(mem, np.array([1]), np.array([0.75]))
    >>> float(c0[0]), float(c1[0])  # π_L = 1/4, π_F = 3/4 - 1/4, stay 1/4
    (0.25, 0.75)
    """

    max_rungs: int = attrs.field(default=1, init=False)
