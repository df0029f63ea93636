"""Look-ahead with a persistent, non-reversibly updated uniform (Neal 2020).

Neal (2020), "Non-reversibly updating a uniform [0,1] value for Metropolis
accept/reject decisions" (arXiv:2001.11950): the uniform ``u`` compared with the
acceptance probability is part of the chain state. Write ``s = u·p(ζ)``, a
slice level; the target of ``(ζ, u)`` is uniform under the graph of ``p``.

The ladder move with ``s`` held fixed is a deterministic map ``T_s`` of the
slice ``{p > s}``: the first rung ``a ≤ K`` with ``p(ζ_a) > s``, else the flip.
Taking the first ``a`` with ``u < C_a = min(1, max_{j≤a} p(ζ_j)/p(ζ))`` (the
look-ahead rule's cumulative probability) is the same thing, because ``u < 1``.
``T_s`` is a bijection of the slice for every ``s`` (docs/design.md §5.2; checked exactly,
interval by interval, in ``tests/exact/test_rules_persistent_uniform.py``), so
the move keeps the uniform distribution under the graph. Afterwards
``u' = s/p(ζ') = u·p(ζ)/p(ζ')`` (rescaled on acceptance, unchanged on a flip). For a
map that changes volume the ratio is weighted by the Jacobian, and so is the
rescaling (docs/design.md §13).

Between steps ``u`` moves non-reversibly in Neal's representation: ``u = |v|``
with ``v ∈ [-1, 1)`` uniform, ``v ← v + δ`` wrapped into ``[-1, 1)`` — a
measure-preserving rotation that keeps ``u`` uniform, small ``u`` (acceptance)
following small ``u`` for about ``1/δ`` steps. A refresh of ``ζ`` between steps
keeps the joint target since it does not look at ``u``.
"""

from __future__ import annotations

from fractions import Fraction

import attrs
import numpy as np

from ladder_mcmc.arrays import namespace
from ladder_mcmc.ladder.rules import LookAheadRule


def _check_delta(_inst, _attr, value) -> None:
    try:
        ok = not isinstance(value, bool) and 0 <= value < 2 and np.isfinite(float(value))
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ValueError(f"delta must be a number in [0, 2), got {value!r}")


def wrap(v):
    """``v`` wrapped into ``[-1, 1)`` (floats, Fractions, numpy and JAX arrays)."""
    return (v + 1) % 2 - 1


@attrs.frozen
class PersistentUniformRule(LookAheadRule):
    """LAHMC's rule with Neal's (2020) persistent uniform carried in the chain state.

    The transition given ``u`` is the look-ahead rule's (paper, section 4.3;
    the plan and ``update`` are inherited from :class:`LookAheadRule`):
    stop at the first ``a ≤ K`` with ``u < C_a``, else flip. ``u`` is not drawn
    afresh each step: the kernel state carries ``v ∈ [-1, 1)`` (``u = |v|``);
    after a step ``|v|`` is rescaled to ``u·p(ζ)/p(ζ')`` on acceptance (the slice
    level ``s = u·p(ζ)`` is kept), then ``v ← v + δ`` wrapped into ``[-1, 1)``.
    With ``δ = 0`` the uniform never moves except by rescaling (still a valid
    kernel but badly mixing ``u``); ``δ ≈ 1`` is close to a fresh uniform.

    Parameters
    ----------
    max_rungs : int
        ``K ≥ 1`` (``K = 1``: Metropolis with a persistent uniform, Neal's case).
    delta : float or Fraction in [0, 2)
        The rotation ``δ`` of ``v`` per step (``u`` falls and rises through
        ``[0, 1]`` with a period of ``2/δ`` steps). The default ``0.01`` was
        chosen by measurement on the paper's three targets at ``β = 0.1``
        (``benchmarks/topologies.py --delta-sweep``; ``benchmarks/results/topologies.md``): on
        the 100-d Gaussian, gradients to autocorrelation 0.5 fall from about 3700
        (LAHMC, or ``δ ≥ 0.3``) to about 2200 for any ``δ`` in ``[0.001, 0.01]``;
        no measurable effect on the 2-d targets.

    References
    ----------
    R. M. Neal (2020), Non-reversibly updating a uniform [0,1] value for
    Metropolis accept/reject decisions, arXiv:2001.11950. J. Sohl-Dickstein,
    M. Mudigonda, M. DeWeese (2014), Hamiltonian Monte Carlo without detailed
    balance, ICML.

    Examples
    --------
    >>> import numpy as np
    >>> rule = PersistentUniformRule(max_rungs=2, delta=0.25)
    >>> v = np.array([-0.5, 0.25])
    >>> rule.uniform(v, np.random.default_rng(0), 2)
    array([0.5 , 0.25])
    >>> # chain 0 flipped (u kept), chain 1 accepted a rung with p(ζ')/p(ζ) = 0.5
    >>> rule.next_carry(v, np.array([0.5, 0.25]), np.array([0, 1]), np.array([1.0, 0.5]))
    array([-0.25,  0.75])
    """

    delta: float | Fraction = attrs.field(default=0.01, validator=_check_delta)

    def init_carry(self, n_chains: int, rng: np.random.Generator) -> np.ndarray:
        """``v ~ U[-1, 1)`` per chain (``u = |v|`` is then uniform on ``[0, 1)``)."""
        return rng.uniform(-1.0, 1.0, n_chains)

    def uniform(self, carry, rng, n):
        """``u = |v|``: no random number is drawn."""
        return namespace(carry).abs(carry)

    def next_carry(self, carry, u, code, ratio):
        """Rescale ``|v|`` to ``u·p(ζ)/p(ζ')`` on acceptance, then ``v ← v + δ`` (wrapped)."""
        xp = namespace(carry, u, code, ratio)
        # a Fraction δ stays exact on numpy (object arrays); JAX takes its float
        delta = self.delta if xp is np else float(self.delta)
        u_new = xp.where(xp.asarray(code) > 0, u / ratio, u)
        sign = xp.where(carry < 0, -1, 1)
        return wrap(sign * u_new + delta)

    def describe(self) -> dict:
        return {
            "rule": "PersistentUniformRule",
            "max_rungs": self.max_rungs,
            "delta": str(self.delta),
        }
