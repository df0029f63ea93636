"""A map parameter drawn from a state-dependent law: the GIST construction on the ladder.

Give a map a parameter ``α`` (a number of steps, a step size, a level of refinement)
whose law ``p(α | ζ)`` may depend on the state ``ζ``, by carrying ``α`` in the state
(docs/design.md §14):

* the extended target is ``p(ζ) · p(α | ζ) · ½`` on ``(ζ, α, d)``;
* :class:`AuxiliaryMap` is ``(ζ, α) → (L_α ζ, α)`` for a family ``L_α``
  (:class:`MapFamily`): for each ``α`` a reversible map of ``ζ``, with ``α`` unchanged.
  Its log density is ``log p(ζ) + log p(α | ζ)``, so every rule weighs a rung
  ``L_α^a ζ`` by the law evaluated *there*;
* :class:`~ladder_mcmc.ladder.auxiliary_refresh.AuxiliaryRefresh` redraws ``α`` from
  ``p(α | ζ)`` (a Gibbs update). It must be the **last** part of the refresh that
  changes the state: a momentum refresh (an
  :class:`~ladder_mcmc.ladder.auxiliary_refresh.InnerRefresh`) keeps ``p(ζ)`` but not
  ``p(ζ) p(α | ζ)``, and only the redraw after it restores the joint.

The law (:class:`AuxiliaryLaw`) may read ``ζ`` but **never the direction** ``d``, and
must be invariant under the family's flip, ``p(α | F ζ) = p(α | ζ)``. ``Ladder``
refuses, where it can see them, a refresh that changes the state after the redraw, a
refresh that never redraws ``α``, and a law whose ``log_prob`` or ``sample`` takes a
direction; ``check_map`` (:mod:`ladder_mcmc.verify.map_contract`) checks the
flip-invariance numerically. With a law that does not depend on ``ζ`` this is the
jittered step size and trajectory length of :mod:`ladder_mcmc.hamiltonian.jitter`.
Nothing here is Hamiltonian.
"""

from __future__ import annotations

import abc
import inspect
from typing import Any, ClassVar

import attrs
import numpy as np

from ladder_mcmc.arrays import namespace
from ladder_mcmc.ladder import batch
from ladder_mcmc.ladder.batch import State
from ladder_mcmc.ladder.maps import ReversibleMap

__all__ = [
    "AuxiliaryLaw",
    "AuxiliaryMap",
    "AuxiliaryState",
    "MapFamily",
    "alpha_of",
    "check_law",
    "gradient_counts",
]

#: parameter names that mean "the direction": a law taking one is refused (docs/design.md §14)
_DIRECTION_NAMES = frozenset({"d", "direction", "directions"})


class AuxiliaryLaw(abc.ABC):
    """The law ``p(α | ζ)`` of a map parameter ``α`` given the state ``ζ`` (docs/design.md §14).

    It may depend on ``ζ`` but not on the direction ``d`` (neither method is given one),
    and must be invariant under the flip of the map family it is used with:
    ``p(α | F ζ) = p(α | ζ)``.

    Attributes
    ----------
    flip_invariant : bool
        Declared: ``p(α | F ζ) = p(α | ζ)`` for the flip of any family it is used with.
        ``True`` here; a law that declares ``False`` is refused by :class:`AuxiliaryMap`
        with a family that has a flip. ``check_map`` checks it numerically either way.
    log_prob_cost : callable or None
        ``None`` here: :meth:`log_prob` evaluates no gradient. A law whose ``log_prob``
        does (it probes the target) defines ``log_prob_cost(alpha, state) -> int array
        (chains,)``, the gradients of one ``log_prob`` per chain; :class:`AuxiliaryMap`
        adds them to the cost of every rung and of the density at the refreshed origin.
        Every rung of a step is charged the cost at the step's origin, so the count is
        exact for a cost that depends on ``α`` alone (``α`` is the same at every rung),
        as :class:`~ladder_mcmc.hamiltonian.refined_step.RefinementLaw`'s does. A subclass
        that defines ``log_prob`` without ``log_prob_cost`` declares ``None``.
    sample_with_cost : callable or None
        ``None`` here: :meth:`sample` evaluates no gradient. A law whose ``sample`` does
        defines ``sample_with_cost(state, rng) -> (alpha, cost)``: the draw ``sample``
        makes from the same numbers, and its gradients per chain (int array (chains,));
        the redraw reports them (``AuxiliaryRefresh.with_cost``). A subclass that
        defines ``sample`` without ``sample_with_cost`` declares ``None``.
    """

    flip_invariant: ClassVar[bool] = True
    log_prob_cost: ClassVar[Any] = None
    sample_with_cost: ClassVar[Any] = None

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if "sample" in vars(cls) and "sample_with_cost" not in vars(cls):
            cls.sample_with_cost = None  # a new sample: the inherited count is not its own
        if "log_prob" in vars(cls) and "log_prob_cost" not in vars(cls):
            cls.log_prob_cost = None  # a new log_prob: likewise

    @abc.abstractmethod
    def log_prob(self, alpha: Any, state: State) -> np.ndarray:
        """``log p(α | ζ)`` per chain, shape ``(chains,)``; ``-inf`` where it is zero."""

    @abc.abstractmethod
    def sample(self, state: State, rng: Any) -> Any:
        """A draw ``α ~ p(· | ζ)`` per chain, shape ``(chains, ...)``.

        ``rng`` is a numpy ``Generator`` or the engine's per-chain streams (its methods
        ``random``, ``standard_normal``, …; row ``i`` of a draw is chain ``i``'s): draw
        with ``size`` led by the number of chains, so that every chain's ``α`` comes
        from its own stream (docs/design.md §11), and as many numbers whatever the
        values (the JAX loop hands them out pre-drawn).
        """

    def describe(self) -> dict:
        """A JSON-able description (for checkpoints and reports)."""
        return {"law": type(self).__name__}


def check_law(law: Any, name: str = "law") -> AuxiliaryLaw:
    """``law`` if it is an :class:`AuxiliaryLaw` whose methods take no direction.

    Raises
    ------
    ValueError
        If ``law`` is not an ``AuxiliaryLaw`` instance, or its ``log_prob`` or
        ``sample`` has a parameter named ``d``, ``direction`` or ``directions``, or
        cannot be called as ``log_prob(alpha, state)`` / ``sample(state, rng)``.
    """
    if isinstance(law, type) or not isinstance(law, AuxiliaryLaw):
        what = law.__name__ if isinstance(law, type) else type(law).__name__
        raise ValueError(f"{name} must be an AuxiliaryLaw instance, got {what}: {law!r}")
    methods = [("log_prob", ("alpha", "state")), ("sample", ("state", "rng"))]
    methods += [
        (method, args)
        for method, args in (
            ("log_prob_cost", ("alpha", "state")),
            ("sample_with_cost", ("state", "rng")),
        )
        if getattr(law, method) is not None
    ]
    for method, args in methods:
        signature = inspect.signature(getattr(law, method))
        reads_d = sorted(_DIRECTION_NAMES & set(signature.parameters))
        if reads_d:
            raise ValueError(
                f"{name} {type(law).__name__}.{method} takes {reads_d[0]!r}: the law p(α | ζ) "
                "may not read the direction d (the ladder's flip (ζ, α, d) → (ζ, α, −d) must "
                "keep the extended density; docs/design.md §14)"
            )
        try:
            signature.bind(*args)
        except TypeError:
            raise ValueError(
                f"{name} {type(law).__name__}.{method} must be callable as "
                f"{method}({', '.join(args)}), got the signature {method}{signature}"
            ) from None
    return law


class MapFamily(abc.ABC):
    """A family of reversible maps ``L_α`` of the states ``ζ``, one for each ``α``.

    For every ``α``: ``forward(ζ, α) = L_α ζ``, deterministic and bijective; the inverse
    given as :meth:`backward`, or through an involution :meth:`flip` ``F_α`` with
    ``F_α L_α F_α = L_α⁻¹``; the density ``p(ζ)`` (:meth:`log_density`) does not depend
    on ``α``. All methods act on a batch (chains first); ``alpha`` holds one value per
    chain. :class:`AuxiliaryMap` turns a family and a law into a
    :class:`~ladder_mcmc.ladder.maps.ReversibleMap`.

    Attributes
    ----------
    cost : int
        Expensive evaluations per application (``ReversibleMap.cost``).
    cost_of : callable or None
        ``None`` here; a family whose cost depends on ``α`` defines the method
        ``cost_of(state, alpha) -> int array (chains,)`` (then ``AuxiliaryMap.cost_of``
        reports it per chain and step).
    """

    cost: int = 1
    cost_of: ClassVar[Any] = None

    @abc.abstractmethod
    def forward(self, state: State, alpha: Any) -> State:
        """``L_α ζ`` for every chain."""

    @abc.abstractmethod
    def log_density(self, state: State) -> np.ndarray:
        """``log p(ζ)`` up to a constant, shape ``(chains,)`` (the law adds ``log p(α | ζ)``)."""

    def flip(self, state: State, alpha: Any) -> State:
        """The involution ``F_α`` (``F_α L_α F_α = L_α⁻¹``, ``p(F_α ζ) = p(ζ)``); optional."""
        raise NotImplementedError(f"{type(self).__name__} defines no flip")

    @property
    def has_flip(self) -> bool:
        """Whether the subclass defines :meth:`flip`."""
        return type(self).flip is not MapFamily.flip

    def backward(self, state: State, alpha: Any) -> State:
        """``L_α⁻¹ ζ``; by default ``F_α L_α F_α ζ`` when :meth:`flip` is defined."""
        if not self.has_flip:
            raise TypeError(
                f"{type(self).__name__} must define backward() or flip(): a MapFamily needs "
                "the inverse of each of its maps"
            )
        return self.flip(self.forward(self.flip(state, alpha), alpha), alpha)

    def log_det_jacobian(self, state: State, alpha: Any) -> np.ndarray:
        """``log |det ∂(L_α ζ)/∂ζ|``, shape ``(chains,)``; zeros here (volume preserving).

        Also the Jacobian of ``(ζ, α) → (L_α ζ, α)``: ``α`` is unchanged, so the matrix is
        block triangular (docs/design.md §13, §14).
        """
        return namespace(*batch.leaves(state)).zeros(batch.n_chains(state))

    @property
    def volume_preserving(self) -> bool:
        """Whether the family declares no :meth:`log_det_jacobian`."""
        return type(self).log_det_jacobian is MapFamily.log_det_jacobian

    @property
    def kinetic_energy(self) -> Any:
        """The kinetic energy the family integrates, or ``None`` (``ReversibleMap``'s)."""
        return None

    def prepare(self, init: Any, rng: np.random.Generator) -> State:
        """Turn a user's initial value into a state ``ζ``. Identity here."""
        return init

    def draw(self, state: State) -> Any:
        """What a trace records of ``ζ``: the whole state by default."""
        return state

    def describe(self) -> dict:
        """A JSON-able description."""
        return {"family": type(self).__name__}


@attrs.frozen(eq=False)
class AuxiliaryState:
    """A batch of states ``(ζ, α)`` of an :class:`AuxiliaryMap`.

    Attributes
    ----------
    inner : State
        ``ζ``, the family's state (chains first).
    alpha : array (chains, ...)
        The map parameter of each chain, drawn from ``p(α | ζ)`` by
        :class:`AuxiliaryRefresh`.
    """

    inner: Any
    alpha: np.ndarray


def _log_prob_of(law: AuxiliaryLaw, alpha: Any, inner: State) -> np.ndarray:
    out = law.log_prob(alpha, inner)
    xp = namespace(out)
    out = xp.asarray(out, dtype=xp.float64)
    n = batch.n_chains(inner)
    if out.shape != (n,):
        raise ValueError(
            f"{type(law).__name__}.log_prob returned shape {out.shape}, expected ({n},): "
            "one log p(α | ζ) per chain"
        )
    return out


def gradient_counts(cost: Any, n: int, what: str) -> np.ndarray:
    """``cost`` as int64 with one entry per chain, or ``ValueError`` naming ``what``.

    Inside a compiled loop (JAX values) the shape and type are checked, the values are
    not (they are unknown until it runs; the numpy loop checks them)."""
    xp = namespace(cost)
    arr = xp.asarray(cost)
    if arr.shape != (n,) or not xp.issubdtype(arr.dtype, xp.integer):
        raise ValueError(
            f"{what} must return integer gradient counts of shape ({n},), got {arr.dtype} "
            f"of shape {arr.shape}"
        )
    if xp is np:
        if arr.size and arr.min() < 0:
            raise ValueError(f"{what} must return counts >= 0, got {int(arr.min())}")
        return arr.astype(np.int64, copy=False)
    return arr.astype(xp.int64)


def alpha_of(alpha: Any, n: int, what: str) -> np.ndarray:
    """``alpha`` as an array with one entry per chain, or ``ValueError`` naming ``what``."""
    arr = namespace(alpha).asarray(alpha)
    if arr.ndim < 1 or arr.shape[0] != n:
        raise ValueError(f"{what} must have one entry per chain ({n}), got shape {arr.shape}")
    return arr


@attrs.frozen(eq=False)
class AuxiliaryMap(ReversibleMap):
    """``(ζ, α) → (L_α ζ, α)`` with the density ``p(ζ) · p(α | ζ)`` (docs/design.md §14).

    For each ``α`` the family's ``L_α`` is a reversible map of ``ζ`` and ``α`` is left
    alone, so this is a reversible map of ``(ζ, α)``, with the flip
    ``(ζ, α) → (F_α ζ, α)`` if the family has one; its Jacobian is the family's
    (declared by the family, passed through). Use it with a refresh whose last part
    that changes the state is ``AuxiliaryRefresh(law)``.

    Parameters
    ----------
    family : MapFamily
        The maps ``L_α`` and the density ``p(ζ)``.
    law : AuxiliaryLaw
        ``p(α | ζ)``: no direction, invariant under the family's flip.

    Raises
    ------
    ValueError
        If ``family`` is not a ``MapFamily``, ``law`` is refused by :func:`check_law`,
        or the law declares ``flip_invariant = False`` and the family has a flip.

    Examples
    --------
    A walk on a cycle of 6 states whose step ``α ∈ {1, 2}`` is more likely to be 2 on
    the even states:

    >>> import numpy as np
    >>> from ladder_mcmc import Ladder, LookAheadRule, sample
    >>> from ladder_mcmc.ladder import AuxiliaryRefresh
    >>> class Steps(MapFamily):
    ...     def forward(self, state, alpha):
    ...         return (state + alpha) % 6
    ...     def backward(self, state, alpha):
    ...         return (state - alpha) % 6
    ...     def log_density(self, state):
    ...         return np.zeros(len(state))
    >>> class EvenLong(AuxiliaryLaw):
    ...     def log_prob(self, alpha, state):
    ...         p_two = np.where(state % 2 == 0, 0.75, 0.25)
    ...         return np.log(np.where(alpha == 2, p_two, 1 - p_two))
    ...     def sample(self, state, rng):
    ...         p_two = np.where(state % 2 == 0, 0.75, 0.25)
    ...         return np.where(rng.random(len(state)) < p_two, 2, 1)
    >>> law = EvenLong()
    >>> kernel = Ladder(AuxiliaryMap(Steps(), law), LookAheadRule(2), AuxiliaryRefresh(law))
    >>> trace = sample(kernel, np.zeros(4, dtype=int), 50, seed=0)
    >>> trace.states.shape, trace.final.state.alpha.shape
    ((50, 4), (4,))
    """

    family: MapFamily
    law: AuxiliaryLaw

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.family, MapFamily):
            raise ValueError(f"family must be a MapFamily, got {type(self.family).__name__}")
        check_law(self.law)
        if self.family.has_flip and not self.law.flip_invariant:
            raise ValueError(
                f"law {type(self.law).__name__} declares flip_invariant = False, but the family "
                f"{type(self.family).__name__} has a flip F: p(α | F ζ) must equal p(α | ζ) "
                "(docs/design.md §14)"
            )

    # ---------------------------------------------------------------- declarations
    @property
    def auxiliary_law(self) -> AuxiliaryLaw:
        """The law ``p(α | ζ)`` its density includes (read by ``Ladder`` and ``check_map``)."""
        return self.law

    @property
    def cost(self) -> int:  # type: ignore[override]
        """The family's ``cost``."""
        return self.family.cost

    @property
    def cost_of(self) -> Any:  # type: ignore[override]
        """``None`` if neither the family nor the law declares a cost per chain; else
        ``state -> family.cost_of(ζ, α) + law.log_prob_cost(α, ζ)``: the application and
        the law at the rung it reaches (the family's ``cost`` if it has no ``cost_of``)."""
        family_cost, law_cost = self.family.cost_of, self.law.log_prob_cost
        if family_cost is None and law_cost is None:
            return None
        fixed, name = int(self.family.cost), type(self.law).__name__

        def cost_of(state: AuxiliaryState) -> np.ndarray:
            n = batch.n_chains(state.inner)
            if family_cost is None:
                xp = namespace(state.alpha, *batch.leaves(state.inner))
                own = xp.full(n, fixed, dtype=xp.int64)
            else:
                own = family_cost(state.inner, state.alpha)
                own = namespace(own).asarray(own)
            if law_cost is None:
                return own
            law = gradient_counts(law_cost(state.alpha, state.inner), n, f"{name}.log_prob_cost")
            return own + law

        return cost_of

    @property
    def log_density_cost(self) -> Any:  # type: ignore[override]
        """``None`` if the law declares no ``log_prob_cost``; else
        ``state -> law.log_prob_cost(α, ζ)`` (the family's ``p(ζ)`` reads the state)."""
        law_cost = self.law.log_prob_cost
        if law_cost is None:
            return None
        name = type(self.law).__name__

        def log_density_cost(state: AuxiliaryState) -> np.ndarray:
            n = batch.n_chains(state.inner)
            return gradient_counts(law_cost(state.alpha, state.inner), n, f"{name}.log_prob_cost")

        return log_density_cost

    @property
    def adaptation(self) -> Any:
        """The family's warm-up hook, ``family.adaptation(kernel, settings, init, checks)``
        (read by :func:`~ladder_mcmc.engine.warmup.adaptation_for`), or ``None`` if it has
        none (then warm-up steps are refused)."""
        return getattr(self.family, "adaptation", None)

    @property
    def kinetic_energy(self) -> Any:
        """The family's kinetic energy (for ``InnerRefresh(MomentumRefresh)``'s check)."""
        return self.family.kinetic_energy

    @property
    def has_flip(self) -> bool:
        """Whether the family has a flip."""
        return self.family.has_flip

    @property
    def volume_preserving(self) -> bool:
        """Whether the family declares no Jacobian."""
        return self.family.volume_preserving

    # ---------------------------------------------------------------- the map
    def forward(self, state: AuxiliaryState) -> AuxiliaryState:
        """``(L_α ζ, α)``."""
        return AuxiliaryState(self.family.forward(state.inner, state.alpha), state.alpha)

    def backward(self, state: AuxiliaryState) -> AuxiliaryState:
        """``(L_α⁻¹ ζ, α)``."""
        return AuxiliaryState(self.family.backward(state.inner, state.alpha), state.alpha)

    def flip(self, state: AuxiliaryState) -> AuxiliaryState:
        """``(F_α ζ, α)``: ``α`` is kept, so ``F L F = L⁻¹`` holds for each ``α``."""
        return AuxiliaryState(self.family.flip(state.inner, state.alpha), state.alpha)

    def log_density(self, state: AuxiliaryState) -> np.ndarray:
        """``log p(ζ) + log p(α | ζ)``: the law is part of the density at every rung."""
        inner = self.family.log_density(state.inner)
        xp = namespace(inner)
        return xp.asarray(inner, dtype=xp.float64) + self.auxiliary_log_prob(state)

    def auxiliary_log_prob(self, state: AuxiliaryState) -> np.ndarray:
        """``log p(α | ζ)`` per chain (checked to be one value per chain)."""
        return _log_prob_of(self.law, state.alpha, state.inner)

    def log_det_jacobian(self, state: AuxiliaryState) -> np.ndarray:
        """The family's ``log |det ∂(L_α ζ)/∂ζ|`` (zeros for a volume-preserving family)."""
        return self.family.log_det_jacobian(state.inner, state.alpha)

    def prepare(self, init: Any, rng: np.random.Generator) -> AuxiliaryState:
        """A state from the family's initial value, ``α`` drawn from ``p(α | ζ)``.

        An :class:`AuxiliaryState` keeps its ``α`` (its ``inner`` goes through the
        family's ``prepare``).

        Raises
        ------
        ValueError
            As the family's ``prepare``; or if ``α`` has not one entry per chain.
        """
        if isinstance(init, AuxiliaryState):
            inner = self.family.prepare(init.inner, rng)
            alpha = init.alpha
            what = "init.alpha"
        else:
            inner = self.family.prepare(init, rng)
            alpha = self.law.sample(inner, rng)
            what = f"{type(self.law).__name__}.sample"
        return AuxiliaryState(inner, alpha_of(alpha, batch.n_chains(inner), what))

    def draw(self, state: AuxiliaryState) -> Any:
        """The family's draw of ``ζ`` (``α`` stays in ``trace.final.state.alpha``)."""
        return self.family.draw(state.inner)

    def describe(self) -> dict:
        return {
            "map": "AuxiliaryMap",
            **self.family.describe(),
            "law": self.law.describe(),
        }
