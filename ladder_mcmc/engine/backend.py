"""The one place that chooses the backend a run takes its ragged steps on, and says why.

* ``"jax"`` — the step compiled by JAX (:mod:`ladder_mcmc.engine.jax_loop`), when the
  target is a JAX target (it has a ``jax_potential``: :func:`~ladder_mcmc.models.from_jax`,
  :func:`~ladder_mcmc.models.from_pymc`) and every part of the kernel traces;
* ``"numpy"`` — the host loop (:mod:`ladder_mcmc.engine.numpy_loop`) otherwise.

``sample(..., backend="numpy" | "jax")`` overrides the choice. Asked for JAX, a kernel
with a part JAX cannot trace is refused, naming the part (for a map, the function of its
target that does not trace: its ``energy``, ...); chosen automatically, the run
falls back to numpy with a :class:`BackendWarning` that names it. Either way the
choice and its reason are recorded (``Trace.backend``).

On JAX, the chains run batched (``"vectorized"``: one map call on every chain) or one
after another (``"sequential"``, on the CPU's cores: :mod:`ladder_mcmc.engine.sequential`),
as ``sample(..., executor=Parallel(chains=...))`` asks; ``"auto"`` (``sample``'s default)
times the target's gradient on the run's chains at once and on one chain alone
(:func:`~ladder_mcmc.engine.sequential.probe`) and applies
:func:`~ladder_mcmc.engine.sequential.chains_rule` to the kernel (after warm-up, to the
adapted one: :func:`choose_chains`). The choice, its reason, the threads and the timings
are recorded with the backend.
"""

from __future__ import annotations

import importlib.util
import warnings
from typing import Any

import attrs
import numpy as np

from ladder_mcmc.diagnostics.gradient import targets_of
from ladder_mcmc.engine.sequential import (
    batch_waste,
    chains_rule,
    check_chains,
    probe,
    usable_threads,
)
from ladder_mcmc.ladder.kernel import Ladder, LadderState
from ladder_mcmc.validation import user_stacklevel

BACKENDS = ("numpy", "jax")


class BackendWarning(UserWarning):
    """A run on a JAX target that takes the numpy backend (a part does not trace)."""


@attrs.frozen
class Backend:
    """What ran a run's ragged steps, and why.

    Attributes
    ----------
    name : str
        ``"numpy"`` or ``"jax"``.
    reason : str
        Why, in words (asked for; a JAX target whose parts trace; not a JAX target; the
        part that does not trace).
    chains, chains_reason : str
        On JAX, how the chains share the compiled loop, and why.
    threads : int
        The threads chains one after another run on (1 for batched chains).
    timings : dict or None
        What ``"auto"`` measured (:func:`~ladder_mcmc.engine.sequential.probe`).
    """

    name: str
    reason: str
    chains: str = "vectorized"
    chains_reason: str = ""
    timings: dict | None = None
    threads: int = 1

    def describe(self) -> dict:
        """``name`` and ``reason``; on JAX also ``chains``, ``chains_reason``,
        ``threads`` and, when measured, ``timings`` (seconds per chain of the gradient
        batched and alone, and of the probe)."""
        out = {"name": self.name, "reason": self.reason}
        if self.name == "jax":
            out.update(chains=self.chains, chains_reason=self.chains_reason, threads=self.threads)
            if self.timings is not None:
                out["timings"] = dict(self.timings)
        return out


def is_jax_target(target: Any) -> bool:
    """Whether a target is written for JAX: it declares a ``jax_potential``."""
    return getattr(target, "jax_potential", None) is not None


def choose_backend(
    kernel: Ladder,
    ks: LadderState,
    requested: str | None = None,
    chains: str = "vectorized",
    threads: int | None = None,
) -> Backend:
    """The backend for ``kernel`` from the state ``ks``, and on JAX how its chains share
    the loop (see the module docstring).

    Raises
    ------
    ValueError
        ``requested`` not ``None``, ``"numpy"`` or ``"jax"``; ``"jax"`` without JAX
        installed, or with a part JAX cannot trace (named); ``chains`` not ``"auto"``,
        ``"vectorized"`` or ``"sequential"``, or ``"sequential"`` on numpy.
    """
    check_chains(chains)
    if requested is not None and requested not in BACKENDS:
        raise ValueError(f"backend must be 'numpy', 'jax' or None, got {requested!r}")
    chosen = _choose(kernel, ks, requested)
    if chosen.name != "jax":
        if chains == "sequential":
            raise ValueError(
                f"chains='sequential' runs on the JAX backend only; this run takes numpy "
                f"({chosen.reason})"
            )
        return chosen
    return choose_chains(kernel, ks, chosen, chains, threads)


def choose_chains(
    kernel: Ladder, ks: LadderState, chosen: Backend, chains: str, threads: int | None = None
) -> Backend:
    """``chosen`` (a JAX backend) with how the chains share the loop: as asked, or for
    ``"auto"`` by :func:`~ladder_mcmc.engine.sequential.chains_rule` on the timings of
    :func:`~ladder_mcmc.engine.sequential.probe` and the kernel's law of trajectory
    lengths (its refresh's ``length_law``); chains one after another on at most
    ``threads`` threads (None: the CPU's cores)."""
    n = int(ks.direction.shape[0])
    if chains != "auto":
        used = usable_threads(n, threads) if chains == "sequential" else 1
        return attrs.evolve(
            chosen, chains=chains, chains_reason=f"asked for (chains={chains!r})", threads=used
        )
    x = getattr(ks.state, "x", None)
    shape = np.shape(x) if x is not None else ()
    batched = {"chains": "vectorized", "threads": 1, "timings": None}
    if n == 1:
        return attrs.evolve(chosen, chains_reason="one chain", **batched)
    dims = (None, shape[1]) if len(shape) == 2 else ()
    targets = [t for t in targets_of(kernel) if getattr(t, "dim", None) in dims]
    if not targets:
        reason = "no target gradient to time: chains batched"
        return attrs.evolve(chosen, chains_reason=reason, **batched)
    timings = probe(targets[0], np.asarray(x, dtype=float))
    law = getattr(kernel.refresh, "length_law", None)
    waste, per_call = batch_waste(law, n)
    if law is None:  # a fixed length: the map's gradients per call
        per_call = float(getattr(kernel.map, "cost", 1) or 1)
    used = usable_threads(n, threads)
    choice, reason = chains_rule(
        timings["vectorized"], timings["sequential"], chains=n, waste=waste,
        per_call=per_call, threads=used,
    )  # fmt: skip
    used = used if choice == "sequential" else 1
    return attrs.evolve(chosen, chains=choice, chains_reason=reason, timings=timings, threads=used)


def _choose(kernel: Ladder, ks: LadderState, requested: str | None) -> Backend:
    if requested == "numpy":
        return Backend("numpy", "asked for (backend='numpy')")
    targets = targets_of(kernel)
    jax_target = bool(targets) and all(is_jax_target(t) for t in targets)
    if requested is None and not jax_target:
        what = type(targets[0]).__name__ if targets else "the kernel's map"
        return Backend("numpy", f"{what} is not a JAX target (no jax_potential)")
    if importlib.util.find_spec("jax") is None:
        if requested == "jax":
            raise ValueError("backend='jax' needs JAX: pip install 'ladder_mcmc[jax]'")
        return Backend("numpy", "JAX is not installed")
    failure = untraceable_part(kernel, ks)
    if failure is not None:
        if requested == "jax":
            raise ValueError(f"backend='jax': {failure}")
        warnings.warn(
            f"the target is a JAX target, but {failure}; running on the numpy backend "
            "(pass backend='numpy' to choose it and silence this warning)",
            BackendWarning,
            stacklevel=user_stacklevel(),
        )
        return Backend("numpy", failure)
    if requested == "jax":
        return Backend("jax", "asked for (backend='jax')")
    return Backend("jax", "a JAX target, and every part of the kernel traces")


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0] if text else ''}"


_TRACED: dict[Any, str | None] = {}


def untraceable_part(kernel: Ladder, ks: LadderState) -> str | None:
    """``None`` if one ragged step of ``kernel`` traces under JAX from ``ks``; else a
    sentence naming the first part that does not, and the error it raised (found once
    per kernel structure and state shape)."""
    from ladder_mcmc.engine.pytree import register, structure_key
    from ladder_mcmc.engine.ragged import RaggedState, StepRecord

    register(RaggedState, StepRecord, LadderState, kernel, ks)
    key = structure_key(kernel, ks)
    if key not in _TRACED:
        _TRACED[key] = _first_untraceable(kernel, ks)
    return _TRACED[key]


def _first_untraceable(kernel: Ladder, ks: LadderState) -> str | None:
    import jax

    from ladder_mcmc.engine.block_draws import Counting
    from ladder_mcmc.engine.ragged import Plan, iterate, start

    n = int(ks.direction.shape[0])
    map_, rule, refresh = kernel.map, kernel.rule, kernel.refresh
    jnp = jax.numpy

    def name(part: Any, what: str) -> str:
        return f"{what} {type(part).__name__}"

    def probes():
        yield name(map_, "the map"), lambda ks: map_.move(ks.state, ks.direction)
        yield name(map_, "the map's log_density of"), lambda ks: map_.log_density(ks.state)
        yield name(map_, "the map's draw of"), lambda ks: map_.draw(ks.state)
        if map_.cost_of is not None:
            yield name(map_, "the map's cost_of of"), lambda ks: map_.cost_of(ks.state)
        if not map_.volume_preserving:
            yield (
                name(map_, "the map's log_det_jacobian of"),
                lambda ks: map_.log_det_jacobian(ks.state),
            )
        yield (
            name(rule, "the rule"),
            lambda ks: rule.update(jnp.zeros(n), jnp.zeros(n, dtype=jnp.int64), jnp.ones(n)),
        )
        yield name(rule, "the rule's uniform of"), lambda ks: rule.uniform(ks.carry, Counting(n), n)
        if refresh is not None:
            parts = getattr(refresh, "parts", None) or (refresh,)
            for part in parts:
                yield (
                    name(part, "the refresh"),
                    lambda ks, part=part: part.with_cost(ks.state, ks.direction, Counting(n)),
                )

    def whole(ks):
        draws = Counting(n)
        rs = start(kernel, ks, jnp.zeros(n, dtype=jnp.int64), draws)
        return iterate(kernel, Plan.of(rule), rs, draws, 2, rs.step < 2)

    with jax.enable_x64(True):
        for label, probe in probes():
            try:
                jax.eval_shape(probe, ks)
            except Exception as err:  # noqa: BLE001 - any error names the part
                if label.startswith("the map"):
                    culprit = _untraceable_target_function(kernel, ks)
                    if culprit is not None:
                        return f"{culprit}, so {label} does not either"
                return f"{label} does not trace under JAX ({_first_line(err)})"
        try:
            jax.eval_shape(whole, ks)
        except Exception as err:  # noqa: BLE001
            return f"the ladder step of {type(map_).__name__} does not trace ({_first_line(err)})"
    return None


def _untraceable_target_function(kernel: Ladder, ks: LadderState) -> str | None:
    """The first function of a target of ``kernel`` (its ``energy``, ``grad``,
    ``energy_and_grad``) that does not trace on the positions of ``ks`` (chains, dim),
    named with the error it raised; None if they all trace (or the state has no
    positions ``x``)."""
    import jax

    shape = getattr(getattr(ks.state, "x", None), "shape", ())
    if len(shape) != 2:
        return None
    point = jax.ShapeDtypeStruct(tuple(shape), jax.numpy.float64)
    for target in targets_of(kernel):
        if getattr(target, "dim", None) not in (None, shape[1]):
            continue
        for name in ("energy", "grad", "energy_and_grad"):
            function = getattr(target, name, None)
            if not callable(function):
                continue
            try:
                jax.eval_shape(function, point)
            except Exception as err:  # noqa: BLE001 - any error names the function
                what = getattr(function, "__qualname__", None) or repr(function)
                return (
                    f"the {name} of the target {type(target).__name__} (the function {what}) "
                    f"does not trace under JAX ({_first_line(err)})"
                )
    return None


__all__ = [
    "BACKENDS",
    "Backend",
    "BackendWarning",
    "choose_backend",
    "choose_chains",
    "untraceable_part",
]
