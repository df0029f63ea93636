"""The ladder kernel: a transition rule on the ladder of any reversible map.

The extended state is ``(ζ, d)``, ``d ∈ {±1}`` per chain, with density
``p(ζ, d) = p(ζ)/2`` (docs/design.md §1; paper, section 6, last paragraph). A rung step
is ``(ζ, d) → (L^d ζ, d)``, the flip is ``(ζ, d) → (ζ, -d)``. On this space
``F ∘ L ∘ F = L⁻¹`` holds for any bijection ``L``, so any rule verified on the
abstract ladder is correct for every map.

One step (paper, section 4.2): the rule moves each chain to a rung, flips it, or
leaves it, then the refresh ``R`` (optional) runs. This module holds the
*synchronous* step — every chain does the same step at once, rungs computed
only for chains still undecided. ``ladder_mcmc.engine.ragged`` runs the same
transitions with every chain at its own rung. For a map that changes volume, a rung's
density is weighted by the Jacobian of the map that reaches it, summed in logs along
the ladder (docs/design.md §13).
"""

from __future__ import annotations

import math
from typing import Any

import attrs
import numpy as np

from ladder_mcmc.arrays import fold_columns, holds_traced, namespace
from ladder_mcmc.ladder import batch
from ladder_mcmc.ladder.auxiliary import gradient_counts
from ladder_mcmc.ladder.auxiliary_refresh import check_auxiliary_refresh
from ladder_mcmc.ladder.maps import ReversibleMap, log_det_jacobian_of
from ladder_mcmc.ladder.refresh import Refresh, check_refresh_kinetic
from ladder_mcmc.ladder.rules import FLIP, LookAheadRule, Rule, base_for, check_rule
from ladder_mcmc.validation import json_safe


@attrs.frozen(eq=False)
class LadderState:
    """Kernel state of a batch of chains.

    Attributes
    ----------
    state : State
        The map's states ζ (chains first).
    direction : int8 array (chains,)
        ``d ∈ {+1, -1}``.
    log_density : float array (chains,)
        ``log p(ζ)`` (cached; always finite).
    carry : Any
        The rule's per-chain memory between steps (``None`` for most rules).
    """

    state: Any
    direction: np.ndarray
    log_density: np.ndarray
    carry: Any = None


@attrs.frozen(eq=False)
class StepInfo:
    """What one step did, per chain.

    Attributes
    ----------
    rung : int array (chains,)
        ``a ≥ 1`` for a move to ``L^a ζ``, ``0`` for the flip, ``-1`` for staying.
    n_moves : int array (chains,)
        Map applications computed (gradient evaluations = ``n_moves * map.cost``, or
        ``n_moves * cost`` for a map with ``cost_of``).
    non_finite : int array (chains,)
        Rungs whose log density (or, for a map that changes volume, summed log
        Jacobian) was not finite: treated as density zero.
    first_stage_prob : float array (chains,)
        ``C_0``, the probability of stopping at the rule's first stage (for
        the look-ahead rule, of taking ``L ζ``: HMC's acceptance probability).
        Step-size adaptation targets its mean.
    cost : int array (chains,) or None
        Gradient evaluations per map application in this step, for a map whose cost
        varies per chain and step (``map.cost_of`` of the step's starting state);
        ``None`` for a map of fixed cost (``map.cost``).
    overhead : int array (chains,) or None
        Gradient evaluations of the step outside its map applications: those the
        refresh reports (``Refresh.with_cost``) and the log density at the refreshed
        state (``map.log_density_cost``); ``None`` when neither declares any.
    energy_error : float array (chains,) or None
        The largest ``log p(ζ) − log p(rung)`` over the rungs the step computed (``inf``
        for a rung of density zero): for leapfrog, the step's largest energy error.
    """

    rung: np.ndarray
    n_moves: np.ndarray
    non_finite: np.ndarray
    first_stage_prob: np.ndarray | None = None
    cost: np.ndarray | None = None
    overhead: np.ndarray | None = None
    energy_error: np.ndarray | None = None


def log_density_of(map_: ReversibleMap, state: Any) -> tuple[np.ndarray, np.ndarray]:
    """``log p`` of a batch, non-finite values (and NaN states) mapped to ``-inf``.

    Returns the sanitised log density and a boolean mask of the non-finite chains.
    """
    with np.errstate(all="ignore"):
        return quiet_log_density_of(map_, state)


def quiet_log_density_of(
    map_: ReversibleMap, state: Any, known: Any = None
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`log_density_of` for callers that already ignore floating-point warnings.

    (``np.errstate`` costs microseconds; the ragged driver enters it once.)
    ``known``: a state known to be finite whose leaves ``state`` may share
    (e.g. the state before a refresh); shared leaves are not checked again.
    """
    lp = map_.log_density(state)
    if type(lp) is not np.ndarray or lp.dtype != _FLOAT:
        xp = namespace(lp)
        if xp is not np:  # inside a compiled loop: no shortcut but the shared leaves
            lp = xp.asarray(lp, dtype=xp.float64)
            bad = ~xp.isfinite(lp) | ~_finite_rows(xp, state, known)
            return xp.where(bad, -xp.inf, lp), bad
        lp = np.asarray(lp, dtype=float)
    if math.isfinite(np.add.reduce(lp, None)) and batch.surely_finite(state, known):
        return lp, batch.constant_mask(lp.shape, False)  # no chain non-finite
    bad = ~np.isfinite(lp) | ~batch.all_finite(state)
    return np.where(bad, -np.inf, lp), bad


_FLOAT = np.dtype(float)


def _finite_rows(xp: Any, state: Any, known: Any) -> Any:
    """Per chain: every floating entry of the leaves of ``state`` not shared with ``known``
    is finite. Compiled: one reduction per leaf shape (``leaf·0`` summed over the leaves
    of a shape is NaN exactly where one of them is not finite)."""
    shared = {id(leaf) for leaf in batch.leaves(known)} if known is not None else set()
    sums: dict[Any, Any] = {}
    for leaf in batch.leaves(state):
        if id(leaf) not in shared and xp.issubdtype(leaf.dtype, xp.inexact):
            key = (leaf.shape, leaf.dtype)
            sums[key] = leaf * 0 if key not in sums else sums[key] + leaf * 0
    ok = None
    for acc in sums.values():
        rows = xp.isfinite(fold_columns(xp, acc.reshape(acc.shape[0], -1))).all(axis=1)
        ok = rows if ok is None else ok & rows
    return xp.ones(batch.n_chains(state), dtype=bool) if ok is None else ok


def density_cost(map_: ReversibleMap, state: Any) -> np.ndarray | None:
    """Gradient evaluations of ``map_.log_density(state)`` per chain
    (``map_.log_density_cost``), or ``None`` if the map declares none."""
    cost = map_.log_density_cost
    if cost is None:
        return None
    counts = cost(state)
    xp = namespace(counts)
    return xp.asarray(counts, dtype=xp.int64)


def refresh_cost(refresh: Refresh, spent: Any, n: int) -> np.ndarray | None:
    """The gradient counts ``refresh.with_cost`` reported for ``n`` chains, checked (int,
    shape ``(n,)``, ≥ 0: else ``ValueError`` naming the refresh), or ``None``."""
    if spent is None:
        return None
    return gradient_counts(spent, n, f"{type(refresh).__name__}.with_cost")


def add_costs(a: np.ndarray | None, b: np.ndarray | None) -> np.ndarray | None:
    """``a + b`` for per-chain gradient counts, ``None`` meaning none."""
    if a is None:
        return b
    return a if b is None else a + b


def jacobian_weighted(
    log_p: np.ndarray, bad: np.ndarray, log_jacobian: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``log p(ζ_a) + log |det ∂ζ_a/∂ζ|`` of rungs, and their non-finite mask.

    A rung whose log density or accumulated log Jacobian is not finite gets ``-inf``
    (density zero) and is counted non-finite (docs/design.md §3.4, §13).
    """
    xp = namespace(log_p, log_jacobian)
    bad = bad | ~xp.isfinite(log_jacobian)
    return xp.where(bad, -xp.inf, log_p + log_jacobian), bad


def density_ratio(log_p: np.ndarray, log_p0: np.ndarray) -> np.ndarray:
    """``p(ζ_a)/p(ζ)`` from logs (``0`` for density zero, ``inf`` on overflow)."""
    with np.errstate(over="ignore"):
        return np.exp(log_p - log_p0)


def _as_names(value: object) -> frozenset[str] | None:
    if value is None:
        return None
    if isinstance(value, str) or not all(isinstance(v, str) for v in value):  # type: ignore[union-attr]
        raise ValueError(f"adapt must be a set of parameter names or None, got {value!r}")
    return frozenset(value)  # type: ignore[arg-type]


@attrs.frozen(eq=False)
class Ladder:
    """A ladder kernel: a map, a rule, and an optional refresh.

    Parameters
    ----------
    map : ReversibleMap
        The deterministic trajectory ``L``.
    rule : Rule
        The transition rule on the ladder (e.g. :class:`~ladder_mcmc.ladder.rules.LookAheadRule`).
    refresh : Refresh, optional
        Applied after every ladder step: an instance (e.g. ``MomentumRefresh(0.1)``),
        or None for no refresh. Its declared kinetic energies must be the map's
        (``Refresh.kinetic_energies``, ``map.kinetic_energy``).
    adapt : frozenset of str, optional (keyword)
        The parameters a warm-up may change, by name (e.g. ``"step_size"``,
        ``"inverse_mass"``, ``"n_leapfrog"``, ``"beta"``): what the user left unset
        in :func:`~ladder_mcmc.lahmc` and its kin, which fill it in. The ladder
        itself never reads it (the map's adaptation does, run by
        :mod:`ladder_mcmc.engine.warmup`). ``None`` (a kernel put together by hand):
        nothing unless a warm-up is asked for. The
        kernel a warm-up returns has nothing left to adapt (an empty set).

    Raises
    ------
    ValueError
        If ``map``, ``rule`` or ``refresh`` is of the wrong kind (a refresh class or a
        plain function instead of a ``Refresh`` instance), the rule's plan breaks
        the contract of :class:`~ladder_mcmc.ladder.rules.Rule` (:func:`check_rule`), or
        the refresh draws momenta for another kinetic energy than the map
        integrates (the message names both), or, for a map that carries a parameter
        ``α ~ p(α | ζ)`` (:class:`~ladder_mcmc.ladder.auxiliary.AuxiliaryMap`), the
        refresh does not redraw ``α`` from the map's law as its last part that changes
        the state (:func:`~ladder_mcmc.ladder.auxiliary_refresh.check_auxiliary_refresh`,
        docs/design.md §14).

    Examples
    --------
    >>> import numpy as np
    >>> from ladder_mcmc import Ladder, DirectionRefresh
    >>> from ladder_mcmc.ladder import LookAheadRule
    >>> from ladder_mcmc.verify import FiniteLadder
    >>> ladder = FiniteLadder([1, 2, 0], [1, 2, 3])
    >>> kernel = Ladder(ladder, LookAheadRule(2), DirectionRefresh(0.5))
    >>> rng = np.random.default_rng(0)
    >>> ks = kernel.init(np.array([0, 1, 2]), rng)
    >>> ks, info = kernel.step(ks, rng)
    >>> info.rung.shape
    (3,)
    """

    map: ReversibleMap
    rule: Rule
    refresh: Refresh | None = None
    # what warm-up may change; not a parameter of the transition, so left out of
    # checkpoint fingerprints (run.checkpoint) and of descriptions when None
    adapt: frozenset[str] | None = attrs.field(
        default=None, kw_only=True, converter=_as_names, metadata={"fingerprint": False}
    )

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.map, ReversibleMap):
            raise ValueError(f"map must be a ReversibleMap, got {type(self.map).__name__}")
        if not isinstance(self.rule, Rule):
            raise ValueError(f"rule must be a Rule, got {type(self.rule).__name__}")
        refresh = self.refresh
        if isinstance(refresh, type) and issubclass(refresh, Refresh):
            raise ValueError(
                f"refresh must be a Refresh instance, e.g. MomentumRefresh(0.1), or None; "
                f"got the class {refresh.__name__} (call it with its parameters)"
            )
        if refresh is not None and not isinstance(refresh, Refresh):
            what = getattr(refresh, "__qualname__", None) or type(refresh).__name__
            raise ValueError(
                f"refresh must be a Refresh instance (a subclass of ladder_mcmc.Refresh) or "
                f"None, got {what}: {refresh!r}"
            )
        check_rule(self.rule)
        if not holds_traced(self.map):  # rebuilt inside a compiled warm-up: checked before
            check_refresh_kinetic(self.map, self.refresh)
        check_auxiliary_refresh(self.map, self.refresh)

    @property
    def max_rung(self) -> int:
        return self.rule.max_rung

    def init(
        self,
        init: Any,
        rng: np.random.Generator,
        direction: np.ndarray | None = None,
    ) -> LadderState:
        """Kernel state for initial values ``init`` (directions drawn uniformly).

        Raises
        ------
        ValueError
            If the map rejects ``init``, its density is zero or non-finite, or the map's
            ``log_det_jacobian`` is not one value per chain.
        """
        state = self.map.prepare(init, rng)
        n = batch.n_chains(state)
        if direction is None:
            direction = np.where(rng.random(n) < 0.5, 1, -1).astype(np.int8)
        else:
            direction = np.asarray(direction, dtype=np.int8)
            if direction.shape != (n,) or not np.all(np.abs(direction) == 1):
                raise ValueError(f"direction must be ±1 with shape ({n},), got {direction!r}")
        lp, bad = log_density_of(self.map, state)
        if bad.any():
            raise ValueError(
                f"init has zero or non-finite density at chains {np.flatnonzero(bad).tolist()}"
            )
        if not self.map.volume_preserving:
            log_det_jacobian_of(self.map, state)  # its shape, before any step
        return LadderState(state, direction, lp, self.rule.init_carry(n, rng))

    def step(self, ks: LadderState, rng: np.random.Generator) -> tuple[LadderState, StepInfo]:
        """One synchronous step of every chain: ladder move, then refresh."""
        rule, map_ = self.rule, self.map
        n = len(ks.direction)
        u = rule.uniform(ks.carry, rng, n)
        code = np.full(n, rule.fallthrough, dtype=np.int64)
        n_moves = np.zeros(n, dtype=np.int64)
        non_finite = np.zeros(n, dtype=np.int64)
        ratio_taken = np.ones(n)
        new_state, new_lp = ks.state, ks.log_density.copy()
        pending = np.arange(n)
        current = ks.state
        memory = np.zeros(n)
        first_stage_prob = np.zeros(n)
        energy_error = np.full(n, -np.inf)  # the largest log p(ζ) − log p(rung) so far
        positions = tuple(rule.positions)
        cost = None if map_.cost_of is None else np.asarray(map_.cost_of(ks.state))
        # log |det ∂(rung)/∂ζ| of the pending chains' current rung (docs/design.md §13)
        jacobian = not map_.volume_preserving
        logjac = np.zeros(0)
        with np.errstate(all="ignore"):  # one errstate for the step (each costs microseconds)
            for s in range(len(positions)):
                if pending.size == 0:
                    break
                # While every chain is pending (always at stage 0) whole arrays are
                # used instead of gathering and scattering by index: same values.
                full = pending.size == n
                from_origin, sign = base_for(positions, s)
                if from_origin:
                    base = ks.state if full else batch.take(ks.state, pending)
                else:
                    base = current
                dirs = sign * (ks.direction if full else ks.direction[pending])
                rung = map_.move(base, dirs)
                lp, bad = quiet_log_density_of(map_, rung)
                lp0 = ks.log_density if full else ks.log_density[pending]
                if jacobian:
                    step_jac = map_.move_log_det_jacobian(base, rung, dirs)
                    logjac = step_jac if from_origin else logjac + step_jac
                    lp_w, bad = jacobian_weighted(lp, bad, logjac)
                else:
                    lp_w = lp
                ratio = np.exp(lp_w - lp0)  # density_ratio, inside this errstate
                if full:
                    energy_error = np.maximum(energy_error, lp0 - lp_w)
                else:
                    energy_error[pending] = np.maximum(energy_error[pending], lp0 - lp_w)
                mem, cum = rule.update(
                    memory if full else memory[pending], np.full(pending.size, s), ratio
                )
                if s == 0:
                    first_stage_prob = np.asarray(cum, dtype=float)
                if full:
                    n_moves += 1
                    non_finite += bad
                    memory[:] = mem
                    stop = u < cum
                else:
                    n_moves[pending] += 1
                    non_finite[pending] += bad
                    memory[pending] = mem
                    stop = u[pending] < cum
                if stop.any():
                    outcome = rule.outcomes[s]
                    if full:
                        code[stop] = outcome
                        if outcome > 0:
                            new_state = batch.where(stop, rung, new_state)
                            new_lp = np.where(stop, lp, new_lp)
                            ratio_taken = np.where(stop, ratio, ratio_taken)
                    else:
                        idx = pending[stop]
                        code[idx] = outcome
                        if outcome > 0:
                            new_state = batch.put(new_state, idx, batch.take(rung, stop))
                            new_lp[idx] = lp[stop]
                            ratio_taken[idx] = ratio[stop]
                pending = pending[~stop]
                if pending.size and s + 1 < len(positions):
                    current = batch.take(rung, ~stop)
                    if jacobian:
                        logjac = logjac[~stop]
            if pending.size and rule.fallthrough > 0:
                # no stage stopped these chains: they move to the fall-through rung,
                # the one the last stage computed (check_rule)
                rest = ~stop
                new_state = batch.put(new_state, pending, batch.take(rung, rest))
                new_lp[pending] = lp[rest]
                ratio_taken[pending] = ratio[rest]
        direction = np.where(code == FLIP, -ks.direction, ks.direction).astype(np.int8)
        carry = rule.next_carry(ks.carry, u, code, ratio_taken)
        state, direction, new_lp, overhead = self.refresh_with_cost(
            new_state, direction, new_lp, rng
        )
        info = StepInfo(code, n_moves, non_finite, first_stage_prob, cost, overhead, energy_error)
        return LadderState(state, direction, new_lp, carry), info

    def apply_refresh(
        self, state: Any, direction: np.ndarray, log_p: np.ndarray, rng: np.random.Generator
    ) -> tuple[Any, np.ndarray, np.ndarray]:
        """Run the refresh on a batch and recompute ``log p`` if it changed the state."""
        return self.refresh_with_cost(state, direction, log_p, rng)[:3]

    def refresh_with_cost(
        self, state: Any, direction: np.ndarray, log_p: np.ndarray, rng: np.random.Generator
    ) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray | None]:
        """:meth:`apply_refresh` and its gradient evaluations per chain (``StepInfo.overhead``):
        the refresh's (``Refresh.with_cost``) plus, if it changed the state, the log
        density's there (``map.log_density_cost``); ``None`` if neither declares any."""
        if self.refresh is None:
            return state, direction, log_p, None
        state, direction, spent = self.refresh.with_cost(state, direction, rng)
        spent = refresh_cost(self.refresh, spent, len(log_p))
        if self.refresh.changes_state:
            log_p, _ = log_density_of(self.map, state)
            spent = add_costs(spent, density_cost(self.map, state))
        return state, np.asarray(direction, dtype=np.int8), log_p, spent

    def describe(self) -> dict:
        """JSON-able description (used to refuse foreign checkpoints); numpy numbers as Python's."""
        return json_safe(
            {
                "kernel": "Ladder",
                **self.map.describe(),
                **self.rule.describe(),
                "refresh": None if self.refresh is None else self.refresh.describe(),
                **({"adapt": sorted(self.adapt)} if self.adapt else {}),
            }
        )


def LookAhead(  # noqa: N802 - a constructor, named like the class it builds
    map: ReversibleMap,  # noqa: A002 - the paper's word
    max_rungs: int = 4,
    refresh: Refresh | None = None,
) -> Ladder:
    """The look-ahead ladder kernel: ``Ladder(map, LookAheadRule(max_rungs), refresh)``.

    Parameters
    ----------
    map : ReversibleMap
        Any reversible map: volume preserving, or declaring its ``log_det_jacobian``.
    max_rungs : int
        ``K ≥ 1``; ``K = 1`` is Metropolis on the ladder (standard persistent HMC
        for leapfrog).
    refresh : Refresh, optional
        E.g. :class:`~ladder_mcmc.hamiltonian.momentum.MomentumRefresh` or
        :class:`~ladder_mcmc.ladder.refresh.DirectionRefresh`.
    """
    return Ladder(map, LookAheadRule(max_rungs), refresh)
