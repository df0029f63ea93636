"""The refreshes of a map parameter drawn from a state-dependent law (docs/design.md §14).

:class:`AuxiliaryRefresh` redraws ``α`` from ``p(α | ζ)``; :class:`InnerRefresh` applies a
refresh of ``ζ`` (a momentum refresh) to the inner state of an
:class:`~ladder_mcmc.ladder.auxiliary.AuxiliaryState`. The redraw must be the last part
of the refresh that changes the state; :func:`check_auxiliary_refresh`, which ``Ladder``
runs, refuses another order where it can see the parts.
"""

from __future__ import annotations

from typing import Any

import attrs

from ladder_mcmc.ladder.auxiliary import (
    AuxiliaryLaw,
    AuxiliaryState,
    alpha_of,
    check_law,
    gradient_counts,
)
from ladder_mcmc.ladder.refresh import ComposedRefresh, Refresh, same_kinetic_energy
from ladder_mcmc.validation import state_field

__all__ = ["AuxiliaryRefresh", "InnerRefresh", "check_auxiliary_refresh", "refresh_parts"]


@attrs.frozen
class InnerRefresh(Refresh):
    """Apply a refresh of ``ζ`` to the ``inner`` state of an :class:`AuxiliaryState`.

    ``α`` is left alone: the result keeps ``p(ζ)`` but in general not
    ``p(ζ) p(α | ζ)``, so an :class:`AuxiliaryRefresh` must come after it.

    Parameters
    ----------
    refresh : Refresh
        A refresh of the family's states (e.g. ``MomentumRefresh(β, metric)``); its
        declared kinetic energies are the composite's.
    """

    refresh: Refresh = attrs.field()

    @refresh.validator
    def _check(self, attribute, value) -> None:
        if not isinstance(value, Refresh):
            raise ValueError(f"refresh must be a Refresh instance, got {type(value).__name__}")

    @property
    def changes_state(self) -> bool:  # type: ignore[override]
        return self.refresh.changes_state

    @property
    def kinetic_energies(self) -> tuple:
        """The wrapped refresh's."""
        return self.refresh.kinetic_energies

    @property
    def costly(self) -> bool:  # type: ignore[override]
        """The wrapped refresh's."""
        return self.refresh.costly

    def __call__(self, state, direction, rng):
        inner = state_field(state, "inner", "InnerRefresh", "AuxiliaryMap's AuxiliaryState")
        inner, direction = self.refresh(inner, direction, rng)
        return AuxiliaryState(inner, state.alpha), direction

    def with_cost(self, state, direction, rng):
        """As :meth:`__call__`, with the wrapped refresh's reported cost."""
        inner = state_field(state, "inner", "InnerRefresh", "AuxiliaryMap's AuxiliaryState")
        inner, direction, cost = self.refresh.with_cost(inner, direction, rng)
        return AuxiliaryState(inner, state.alpha), direction, cost

    def describe(self) -> dict:
        return {"refresh": "InnerRefresh", "inner": self.refresh.describe()}


@attrs.frozen
class AuxiliaryRefresh(Refresh):
    """Redraw each chain's ``α`` from ``p(α | ζ)``: a Gibbs update (docs/design.md §14).

    Keeps ``p(ζ) p(α | ζ) / 2`` from any law of ``(ζ, d)`` with marginal ``p(ζ)/2``, so it
    must be the last part of the refresh that changes the state (``Ladder`` refuses
    another order where the composition is visible). ``changes_state`` is true: ``α``
    enters the log density through the law. ``costly`` if the law declares
    ``sample_with_cost`` (its draw evaluates gradients, which :meth:`with_cost` reports).

    Parameters
    ----------
    law : AuxiliaryLaw
        The map's law (``Ladder`` refuses another).

    Raises
    ------
    ValueError
        If ``law`` is refused by :func:`check_law`; at call time, a state without
        ``inner`` (use :class:`AuxiliaryMap`) or a draw without one ``α`` per chain.
    """

    law: AuxiliaryLaw = attrs.field()

    @law.validator
    def _check(self, attribute, value) -> None:
        check_law(value)

    @property
    def auxiliary_law(self) -> AuxiliaryLaw:
        """The law this refresh redraws ``α`` from (read by ``Ladder``)."""
        return self.law

    @property
    def costly(self) -> bool:  # type: ignore[override]
        """Whether the law declares ``sample_with_cost``."""
        return self.law.sample_with_cost is not None

    def __call__(self, state, direction, rng):
        state, direction, _ = self.with_cost(state, direction, rng)
        return state, direction

    def with_cost(self, state, direction, rng):
        """The redraw, and the gradients the law's draw spent (``None`` if it declares none)."""
        inner = state_field(state, "inner", "AuxiliaryRefresh", "AuxiliaryMap's AuxiliaryState")
        n, name = len(direction), type(self.law).__name__
        counted = self.law.sample_with_cost
        if counted is None:
            alpha, cost, what = self.law.sample(inner, rng), None, f"{name}.sample"
        else:
            alpha, cost = counted(inner, rng)
            what = f"{name}.sample_with_cost"
            cost = gradient_counts(cost, n, what)
        alpha = alpha_of(alpha, n, what)
        return AuxiliaryState(inner, alpha), direction, cost

    def describe(self) -> dict:
        return {"refresh": "AuxiliaryRefresh", **self.law.describe()}


# ---------------------------------------------------------------- validation
def refresh_parts(refresh: Refresh | None, *, inner: bool = False) -> tuple[Refresh, ...]:
    """The parts a refresh applies, in order, as far as they can be seen.

    ``()`` for ``None``; a :class:`~ladder_mcmc.ladder.refresh.ComposedRefresh` (that
    class exactly: a subclass may apply its parts otherwise) is opened recursively; any
    other refresh is one part. ``inner``: an :class:`InnerRefresh` stands for the refresh
    it wraps (what a warm-up adapts), opened in turn.
    """
    if refresh is None:
        return ()
    if inner and isinstance(refresh, InnerRefresh):
        return refresh_parts(refresh.refresh, inner=True)
    if type(refresh) is not ComposedRefresh:
        return (refresh,)
    return tuple(p for part in refresh.parts for p in refresh_parts(part, inner=inner))


def _label(part: Refresh) -> str:
    inner = getattr(part, "refresh", None)
    if isinstance(part, InnerRefresh) and inner is not None:
        return f"InnerRefresh({type(inner).__name__})"
    return type(part).__name__


def check_auxiliary_refresh(map_: Any, refresh: Refresh | None) -> None:
    """Refuse a refresh that does not keep ``p(ζ) p(α | ζ)`` where that can be seen.

    Reads the declarations ``map_.auxiliary_law`` and each part's ``auxiliary_law``
    (the parts of a composition as :func:`refresh_parts` lists them):

    * a part that redraws ``α`` must be followed by no part that changes the state;
    * it must redraw from the map's own law (the same object, or an equal one:
      attrs laws compare field by field, others with ``==``);
    * a map that carries a law needs a part that redraws ``α``;
    * a part that redraws ``α`` needs a map that carries one.

    A refresh that redraws ``α`` inside a part that is not a plain ``ComposedRefresh`` is
    trusted to do it last: the exact checks (``ladder_mcmc.verify``) are what catch it otherwise.

    Raises
    ------
    ValueError
        Naming the order of the parts, or both laws.
    """
    law = getattr(map_, "auxiliary_law", None)
    parts = refresh_parts(refresh)
    order = " + ".join(_label(p) for p in parts) or "no refresh"
    redraws = [k for k, p in enumerate(parts) if getattr(p, "auxiliary_law", None) is not None]
    for k in redraws:
        own = parts[k].auxiliary_law
        if law is None:
            raise ValueError(
                f"refresh part {_label(parts[k])} redraws an auxiliary α, but the map "
                f"{type(map_).__name__} carries none (use AuxiliaryMap(family, law))"
            )
        if not same_kinetic_energy(own, law):
            raise ValueError(
                f"refresh part {_label(parts[k])} redraws α from {own!r}, but the map's "
                f"density uses {law!r}, which is neither the same object nor equal to it: "
                "redraw from the map's law (AuxiliaryRefresh(map.law))"
            )
        later = [_label(p) for p in parts[k + 1 :] if p.changes_state]
        if later:
            raise ValueError(
                f"{_label(parts[k])} must be the last part of the refresh that changes the "
                f"state, but {', '.join(later)} comes after it (order: {order}): a part after "
                "the redraw changes ζ and leaves α drawn for the old ζ, which keeps p(ζ) but "
                "not p(ζ) p(α | ζ) (docs/design.md §14); put the redraw last"
            )
    if law is not None and not redraws:
        raise ValueError(
            f"the map {type(map_).__name__} carries α ~ {type(law).__name__}, but the refresh "
            f"({order}) never redraws it: add AuxiliaryRefresh(law) as its last part that "
            "changes the state (docs/design.md §14)"
        )
