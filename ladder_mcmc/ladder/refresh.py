"""Refresh operators ``R``: stochastic steps that keep ``p(ζ, d)`` invariant.

A refresh runs after every ladder step (paper, section 4.2, step 2) and moves
the chain off its current ladder. It is a callable
``refresh(state, direction, rng) -> (state, direction)`` acting on a batch of
chains; ``changes_state`` tells the ladder whether the log density must be
recomputed afterwards.

A refresh declares what ``Ladder`` checks of it: ``kinetic_energies``, the kinetic
energies it draws momenta for (which :func:`check_refresh_kinetic` holds to the map's),
and ``auxiliary_law``, the law it redraws a map parameter from
(:mod:`ladder_mcmc.ladder.auxiliary_refresh`). The base class declares nothing.

A refresh is written against the namespace of its inputs (:mod:`ladder_mcmc.arrays`),
so that it runs in the numpy loop and in the compiled JAX loop; ``rng`` hands out the
same per-chain numbers in both, and the count of numbers a refresh draws per call must
not depend on the values (:mod:`ladder_mcmc.engine.block_draws`).

A refresh that evaluates gradients (a redraw from a law that probes the target) says so:
``costly`` is true and :meth:`Refresh.with_cost` returns the gradients it spent per
chain; the engine records them with the step (``Trace.step_overhead``,
docs/design.md §6).
"""

from __future__ import annotations

import abc
from fractions import Fraction
from typing import Any

import attrs
import numpy as np

from ladder_mcmc.arrays import namespace
from ladder_mcmc.validation import randomising_probability


def _as_prob(value: object):
    why = "prob = 0 never resamples the direction (a no-op); omit the refresh instead"
    return randomising_probability("prob", value, why)


class Refresh(abc.ABC):
    """Abstract refresh operator."""

    changes_state: bool = True

    @abc.abstractmethod
    def __call__(
        self, state: Any, direction: np.ndarray, rng: np.random.Generator
    ) -> tuple[Any, np.ndarray]:
        """Refresh a batch of chains."""

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if "__call__" in vars(cls) and "with_cost" not in vars(cls):
            # a new __call__ that does not report its cost: with_cost must call it
            cls.with_cost = Refresh.with_cost  # type: ignore[method-assign]
            if "costly" not in vars(cls):
                cls.costly = Refresh.costly  # type: ignore[assignment]
        elif "with_cost" in vars(cls) and "costly" not in vars(cls):
            # a class that reports costs is costly unless it says otherwise
            cls.costly = property(lambda self: True)  # type: ignore[assignment]

    @property
    def costly(self) -> bool:
        """Whether :meth:`with_cost` may report gradient evaluations; ``False`` here.

        Declared by a refresh that evaluates gradients (an
        :class:`~ladder_mcmc.ladder.auxiliary_refresh.AuxiliaryRefresh` whose law declares
        ``sample_with_cost``); the ragged step records the cost of the chains that ended
        a step only (``Trace.step_overhead``).
        """
        return False

    def with_cost(
        self, state: Any, direction: np.ndarray, rng: np.random.Generator
    ) -> tuple[Any, np.ndarray, np.ndarray | None]:
        """``(state, direction, cost)``: the refresh, and the gradient evaluations it spent
        per chain (int array (chains,)), or ``None`` for none.

        Here ``self(state, direction, rng)`` and ``None``. A class that defines
        ``__call__`` without ``with_cost`` gets this one back (and ``costly`` false); a
        class that defines ``with_cost`` without ``costly`` is costly.
        """
        state, direction = self(state, direction, rng)
        return state, direction, None

    def __add__(self, other: Refresh) -> ComposedRefresh:
        """``a + b``: apply ``a`` then ``b``."""
        return ComposedRefresh((self, other))

    @property
    def kinetic_energies(self) -> tuple:
        """The kinetic energies ``K`` whose momentum law ``exp(-K)`` this refresh keeps.

        ``Ladder`` refuses a refresh whose declared kinetic energies differ from the
        one its map integrates (:func:`check_refresh_kinetic`). ``()`` here: a
        refresh that declares nothing is not checked.
        """
        return ()

    @property
    def auxiliary_law(self) -> Any:
        """The law ``p(α | ζ)`` this refresh redraws a map parameter ``α`` from, or ``None``.

        :class:`~ladder_mcmc.ladder.auxiliary_refresh.AuxiliaryRefresh` declares its law;
        ``Ladder`` then requires that no part after it changes the state, and that the law
        is the map's (docs/design.md §14). Inherited by subclasses. ``None`` here.
        """
        return None

    @property
    def length_law(self) -> tuple[np.ndarray, np.ndarray] | None:
        """``(values, probabilities)``: the law of the gradient evaluations per map call
        this refresh draws for each chain (a jittered trajectory length), or ``None``.

        The compiled loop's choice of how chains share it
        (:func:`~ladder_mcmc.engine.sequential.chains_rule`) reads it: a batched map call
        runs as long as its longest chain. ``None`` here: a refresh that draws no length.
        """
        return None

    def describe(self) -> dict:
        return {"refresh": type(self).__name__}


@attrs.frozen
class ComposedRefresh(Refresh):
    """Apply several refreshes in order; each keeps the target, so does the whole."""

    parts: tuple[Refresh, ...] = attrs.field(converter=tuple)

    @property
    def changes_state(self) -> bool:  # type: ignore[override]
        return any(p.changes_state for p in self.parts)

    @property
    def kinetic_energies(self) -> tuple:
        """Every part's declared kinetic energies, in order."""
        return tuple(k for p in self.parts for k in getattr(p, "kinetic_energies", ()))

    def __call__(self, state, direction, rng):
        for part in self.parts:
            state, direction = part(state, direction, rng)
        return state, direction

    @property
    def length_law(self) -> tuple[np.ndarray, np.ndarray] | None:
        """The last part's that declares one (a later draw replaces an earlier)."""
        laws = [p.length_law for p in self.parts if p.length_law is not None]
        return laws[-1] if laws else None

    @property
    def costly(self) -> bool:  # type: ignore[override]
        """Whether any part is."""
        return any(p.costly for p in self.parts)

    def with_cost(self, state, direction, rng):
        """The parts in order (each through its ``with_cost``); the costs they report, summed."""
        total = None
        for part in self.parts:
            state, direction, cost = part.with_cost(state, direction, rng)
            if cost is not None:
                total = cost if total is None else total + cost
        return state, direction, total

    def describe(self) -> dict:
        return {"refresh": "ComposedRefresh", "parts": [p.describe() for p in self.parts]}


@attrs.frozen
class DirectionRefresh(Refresh):
    """Resample the direction ``d`` uniformly from ``{±1}`` with probability ``prob``.

    Keeps ``p(ζ, d) = p(ζ)/2`` (docs/design.md §6). ``prob = 1`` makes every step start
    in a random direction (a reversible chain); a small ``prob`` keeps the
    direction, giving a lifted (non-reversible) chain.

    Parameters
    ----------
    prob : float or Fraction in (0, 1]
        Per-chain probability of resampling the direction each step. A
        :class:`fractions.Fraction` (or an exact binary float) lets
        ``ladder_mcmc.verify.finite`` build exact transition matrices.
    """

    prob: float | Fraction = attrs.field(converter=_as_prob)
    changes_state = False

    def __call__(self, state, direction, rng):
        xp = namespace(direction)
        n = len(direction)
        resample = rng.random(n) < float(self.prob)
        fresh = xp.where(rng.random(n) < 0.5, 1, -1).astype(direction.dtype)
        return state, xp.where(resample, fresh, direction)

    def describe(self) -> dict:
        return {"refresh": "DirectionRefresh", "prob": str(self.prob)}


def same_kinetic_energy(a: Any, b: Any) -> bool:
    """Whether two kinetic energies are the same: one object, or equal ones of one class.

    A kinetic energy that declares ``same_law(other)`` decides itself (a
    :class:`~ladder_mcmc.hamiltonian.metrics.Metric` knows that the identity, a
    diagonal of ones and the identity matrix are one law). Other attrs classes
    (:class:`~ladder_mcmc.hamiltonian.kinetic.PowerKinetic`) are compared field by
    field, arrays by shape and entries (``np.array_equal``); other objects with ``==``.
    """
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    same_law = getattr(a, "same_law", None)
    if callable(same_law):
        return bool(same_law(b))
    if not attrs.has(type(a)):
        return bool(a == b)
    for field in attrs.fields(type(a)):
        x, y = getattr(a, field.name), getattr(b, field.name)
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            if x is None or y is None or np.shape(x) != np.shape(y) or not np.array_equal(x, y):
                return False
        elif x is not y and not bool(x == y):
            return False
    return True


def _kinetic_text(kinetic: Any) -> str:
    """``Metric(inverse_mass=[1. 4.])``: a kinetic energy's class and init fields, briefly."""
    if not attrs.has(type(kinetic)):
        return repr(kinetic)
    parts = []
    for field in attrs.fields(type(kinetic)):
        if field.init:
            value = getattr(kinetic, field.name)
            if isinstance(value, np.ndarray):
                value = np.array2string(value, precision=4, threshold=8)
            parts.append(f"{field.alias}={value}")
    return f"{type(kinetic).__name__}({', '.join(parts)})"


def check_refresh_kinetic(map_: Any, refresh: Any) -> None:
    """Refuse a refresh that draws momenta for another kinetic energy than the map integrates.

    The map declares ``kinetic_energy``, the refresh ``kinetic_energies``
    (:meth:`Refresh.kinetic_energies`); each of the latter must be
    :func:`same_kinetic_energy` as the former. A part that declares nothing is not
    checked.

    Raises
    ------
    ValueError
        Naming both kinetic energies, if they differ.
    """
    own = getattr(map_, "kinetic_energy", None)
    if own is None or refresh is None:
        return
    for kinetic in getattr(refresh, "kinetic_energies", ()):
        if not same_kinetic_energy(kinetic, own):
            raise ValueError(
                f"refresh {type(refresh).__name__} draws momenta for "
                f"{_kinetic_text(kinetic)}, but the map {type(map_).__name__} integrates "
                f"{_kinetic_text(own)}: give the refresh the map's kinetic energy "
                "(e.g. MomentumRefresh(beta, map.metric))"
            )
