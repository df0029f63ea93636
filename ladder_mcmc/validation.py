"""Checks of user-supplied hyperparameters: a clear ``ValueError`` naming the parameter;
and :class:`SamplingWarning`, what a run that went bad says."""

from __future__ import annotations

import os
import sys
from fractions import Fraction
from typing import Any

import numpy as np

from ladder_mcmc.arrays import is_traced


class SamplingWarning(UserWarning):
    """A run whose draws should not be trusted as they are (see
    :func:`ladder_mcmc.diagnostics.check_trace`), or a warm-up that went bad.

    Silence it with ``sample(..., checks=False)`` or
    ``warnings.filterwarnings("ignore", category=SamplingWarning)``.
    """


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def user_stacklevel() -> int:
    """The ``stacklevel`` that makes a ``warnings.warn`` in the calling function point at
    the first frame outside ``ladder_mcmc``: the user's line that started the work (the
    outermost frame if every frame is the package's, e.g. in a worker thread)."""
    frame = sys._getframe(1)
    level = 1
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back
        level += 1
    return level


def positive_int(name: str, value: Any, minimum: int = 1) -> int:
    """``value`` as an int, or ``ValueError`` unless it is an integer ``>= minimum``."""
    if is_traced(value):  # computed inside a compiled loop (ladder_mcmc.arrays.is_traced)
        return value
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def positive_finite(name: str, value: Any) -> float:
    """``value`` as a float, or ``ValueError`` unless it is finite and ``> 0``."""
    if is_traced(value):  # computed inside a compiled loop (ladder_mcmc.arrays.is_traced)
        return value
    try:
        ok = not isinstance(value, bool) and bool(np.isfinite(value)) and value > 0
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ValueError(f"{name} must be finite and > 0, got {value!r}")
    return float(value)


def in_open_closed(name: str, value: Any, low: float, high: float, why: str = "") -> float:
    """``value`` as a float, or ``ValueError`` unless it is a number in ``(low, high]``.

    Booleans and strings (which ``float`` would accept) are refused; ``why``
    is appended to the message.
    """
    if is_traced(value):
        return value
    try:
        ok = not isinstance(value, (bool, str)) and low < float(value) <= high
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ValueError(f"{name} must be a number in ({low:g}, {high:g}]{why}, got {value!r}")
    return float(value)


def jitter_fraction(value: object, *, zero: bool, one: bool, why: str = "") -> float:
    """A jitter's relative half-width ``value`` as a float in ``[0, 1]``, or ``ValueError``
    (naming ``jitter``): ``0`` refused unless ``zero``, ``1`` unless ``one``; ``why`` (what
    the fraction is of, or what to do instead) ends the message."""
    if is_traced(value):
        return value
    number = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
        value, bool
    )
    low, high = ("[" if zero else "("), ("]" if one else ")")
    if not (
        number and (0 < value or (zero and value == 0)) and (value < 1 or (one and value == 1))
    ):
        raise ValueError(f"jitter must be a number in {low}0, 1{high}, got {value!r}{why}")
    return float(value)


def probability(name: str, value: Any) -> Any:
    """``value``, or ``ValueError`` unless it is a number in ``[0, 1]``.

    :class:`fractions.Fraction` values are kept exact (for ``ladder_mcmc.verify.finite``);
    a numpy number is returned as the Python number of the same value.
    """
    if is_traced(value):
        return value
    if isinstance(value, Fraction):
        ok = 0 <= value <= 1
    else:
        try:
            ok = not isinstance(value, bool) and bool(np.isfinite(value)) and 0 <= value <= 1
        except (TypeError, ValueError):
            ok = False
    if not ok:
        raise ValueError(f"{name} must be a number in [0, 1], got {value!r}")
    return python_number(value)


def randomising_probability(name: str, value: Any, if_zero: str) -> Any:
    """:func:`probability` in ``(0, 1]``: for a refresh whose ``value = 0`` draws nothing.

    ``if_zero``: what 0 would do and what to use instead, for the message.
    """
    if is_traced(value):
        return value
    try:
        value = probability(name, value)
    except ValueError:
        raise ValueError(f"{name} must be a number in (0, 1], got {value!r}") from None
    if value == 0:
        raise ValueError(f"{name} must be in (0, 1], got {value!r}: {if_zero}")
    return value


def python_number(value: Any) -> Any:
    """A numpy number as the Python number of the same value; anything else unchanged."""
    return value.item() if isinstance(value, np.generic) else value


def json_safe(value: Any) -> Any:
    """``value`` with every numpy number in it (in dicts, lists, tuples) made a Python one."""
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [json_safe(v) for v in value]
    if isinstance(value, tuple):
        return tuple(json_safe(v) for v in value)
    return python_number(value)


def state_field(state: Any, name: str, user: str, provider: str) -> Any:
    """``state.<name>``, or ``ValueError`` if the state has no such field.

    For a refresh (``user``) that acts on an auxiliary field which only some
    maps' states carry (``provider``: the map and state class that do).
    """
    value = getattr(state, name, None)
    if value is None:
        raise ValueError(
            f"{user} needs a state with a {name} field ({provider}), got {type(state).__name__}"
        )
    return value


def attrs_converter(check, name: str):
    """Wrap a check as an attrs converter: the field holds what the check returns."""

    def convert(value):
        return check(name, value)

    return convert


def attrs_validator(check, name: str | None = None):
    """Wrap a check as an attrs validator (the attribute's name is the parameter's)."""

    def validate(_inst, attr, value):
        check(name or attr.name, value)

    return validate


def boolean(name: str, value: Any) -> bool:
    """``value`` as a bool, or ``ValueError`` unless it is ``True`` or ``False``
    (a string such as ``"no"`` would otherwise count as true)."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return bool(value)
