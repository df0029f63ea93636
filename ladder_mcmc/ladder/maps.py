"""The reversible-map contract: the deterministic trajectory a ladder climbs.

A :class:`ReversibleMap` is a deterministic bijection ``L`` of the extended state
space together with the target density ``p`` on that space (paper, section 3.3;
docs/design.md §1). It preserves volume unless it declares
:meth:`ReversibleMap.log_det_jacobian`; then every rule weighs a rung's density by
the Jacobian of the map that reaches it (docs/design.md §13). The ladder of states
``..., L^-1 ζ, ζ, L ζ, L^2 ζ, ...`` (paper, figure 1b) is climbed by applying ``L``
(direction ``d = +1``) or ``L^-1`` (``d = -1``) one rung at a time.

A subclass supplies :meth:`ReversibleMap.forward` and
:meth:`ReversibleMap.log_density`, and the inverse in one of two ways:

* :meth:`ReversibleMap.backward` directly, or
* an involution :meth:`ReversibleMap.flip` with ``p(F ζ) = p(ζ)`` and
  ``F ∘ L ∘ F = L^-1`` (paper, eq. for ``L^-1`` in section 3.3.2); then
  ``backward = flip ∘ forward ∘ flip`` for free.

All methods act on a batch: the leading axis of every array indexes chains.
"""

from __future__ import annotations

import abc
from typing import Any, ClassVar

import numpy as np

from ladder_mcmc.arrays import is_jax, known, namespace
from ladder_mcmc.ladder import batch
from ladder_mcmc.ladder.batch import State


class ReversibleMap(abc.ABC):
    """Abstract deterministic, reversible map ``L`` (volume preserving by default).

    Attributes
    ----------
    cost : int
        Gradient (or other expensive) evaluations one application of the map
        costs per chain, the log density at the rung it reaches included. Used only
        for bookkeeping (``Trace.grad_evals``). Leapfrog sets it to its number of
        leapfrog steps ``M``.
    cost_of : callable or None
        ``None`` (here): every application costs :attr:`cost`. A map whose cost varies
        per chain and step defines the method ``cost_of(state) -> int array (chains,)``,
        the evaluations of one application during the step that starts from ``state``
        (:class:`~ladder_mcmc.hamiltonian.jittered_length.JitteredLengthLeapfrog`: each
        chain's ``n``); the engine then records it with every step
        (``StepInfo.cost``, ``Trace.step_cost``) and the gradient counts stay exact.
    log_density_cost : callable or None
        ``None`` (here): :meth:`log_density` evaluates no gradient (it reads what the
        state holds). A map whose density does (an
        :class:`~ladder_mcmc.ladder.auxiliary.AuxiliaryMap` whose law probes the target)
        defines ``log_density_cost(state) -> int array (chains,)``; the engine counts it
        once per step, where a refresh changed the state (``Trace.step_overhead``).

    Every method acts on numpy arrays and on JAX values alike (written against
    :func:`~ladder_mcmc.arrays.namespace` of its inputs), so that the same map runs in
    the numpy loop and in the compiled JAX loop (:mod:`ladder_mcmc.engine.ragged`).

    Examples
    --------
    The shift on a cycle of ``n`` states, uniform density, is a reversible map
    whose inverse is given directly:

    >>> import numpy as np
    >>> class Shift(ReversibleMap):
    ...     n = 5
    ...     def forward(self, state):
    ...         return (state + 1) % self.n
    ...     def backward(self, state):
    ...         return (state - 1) % self.n
    ...     def log_density(self, state):
    ...         return np.zeros(len(state))
    >>> Shift().move(np.array([0, 4]), np.array([1, -1]))
    array([1, 3])
    """

    cost: int = 1
    cost_of: ClassVar[Any] = None
    log_density_cost: ClassVar[Any] = None

    @property
    def kinetic_energy(self) -> Any:
        """The kinetic energy ``K`` of the momentum this map integrates, or ``None``.

        For maps on phase space with density ``exp(-E(x) - K(v))``; ``Ladder`` holds a
        refresh's declared kinetic energies to it
        (:func:`~ladder_mcmc.ladder.refresh.check_refresh_kinetic`). ``None`` here: declares
        nothing.
        """
        return None

    @property
    def auxiliary_law(self) -> Any:
        """The law ``p(α | ζ)`` of a parameter carried in the state, if the density includes
        one (:class:`~ladder_mcmc.ladder.auxiliary.AuxiliaryMap`); ``None`` here.

        ``Ladder`` then requires a refresh that redraws ``α`` last (docs/design.md §14).
        """
        return None

    @abc.abstractmethod
    def forward(self, state: State) -> State:
        """``L ζ`` for every chain."""

    @abc.abstractmethod
    def log_density(self, state: State) -> np.ndarray:
        """``log p(ζ)`` up to an additive constant, shape ``(chains,)``.

        ``-inf`` (or any non-finite value) means density zero: such a state is
        never moved to.
        """

    def log_det_jacobian(self, state: State) -> np.ndarray:
        """``log |det ∂(L ζ)/∂ζ|`` of the forward map at ``ζ``, shape ``(chains,)``.

        Optional: zeros here, a volume-preserving map. A map that changes volume
        overrides it, and every rule then uses ``p(L^a ζ) |det ∂(L^a ζ)/∂ζ| / p(ζ)`` in
        place of the density ratio (docs/design.md §13). A non-finite value makes the
        rung density zero, like a non-finite ``log_density``.
        """
        return namespace(*batch.leaves(state)).zeros(batch.n_chains(state))

    @property
    def volume_preserving(self) -> bool:
        """Whether the map declares no :meth:`log_det_jacobian` (then the engine skips it)."""
        return type(self).log_det_jacobian is ReversibleMap.log_det_jacobian

    def move_log_det_jacobian(
        self, state: State, moved: State, direction: np.ndarray
    ) -> np.ndarray:
        """``log |det ∂(L^d ζ)/∂ζ|`` at ``ζ = state`` for ``moved = move(state, direction)``.

        ``log_det_jacobian(ζ)`` where ``d = +1`` and ``−log_det_jacobian(moved)`` where
        ``d = −1`` (``L⁻¹`` at ``ζ`` is the inverse of ``L`` at ``L⁻¹ ζ``): one call on the
        batch. The engine adds it up along the ladder (docs/design.md §13).

        Raises
        ------
        ValueError
            If :meth:`log_det_jacobian` returns another shape than ``(chains,)``.
        """
        back = _as_direction(direction) < 0
        if known(back.any()) is False:  # host shortcuts: the same values
            return log_det_jacobian_of(self, state)
        if known(back.all()) is True:
            return -log_det_jacobian_of(self, moved)
        logdet = log_det_jacobian_of(self, batch.where(back, moved, state))
        return namespace(back, logdet).where(back, -logdet, logdet)

    def flip(self, state: State) -> State:
        """The involution ``F`` (``F F = id``, ``p(F ζ) = p(ζ)``, ``F L F = L^-1``).

        Optional: a map that defines :meth:`backward` need not define it. ``F`` must
        preserve volume even when ``L`` does not (docs/design.md §13).
        """
        raise NotImplementedError(f"{type(self).__name__} defines no flip")

    @property
    def has_flip(self) -> bool:
        """Whether the subclass defines :meth:`flip`."""
        return type(self).flip is not ReversibleMap.flip

    def backward(self, state: State) -> State:
        """``L^-1 ζ``; by default ``F L F ζ`` when :meth:`flip` is defined."""
        if not self.has_flip:
            raise TypeError(
                f"{type(self).__name__} must define backward() or flip(): "
                "a ReversibleMap needs its inverse"
            )
        return self.flip(self.forward(self.flip(state)))

    def move(self, state: State, direction: np.ndarray) -> State:
        """Apply ``L^d`` to each chain, ``d = direction[i] ∈ {+1, -1}``.

        With a flip this costs one batched :meth:`forward` call (``L^-1 = F L F``, the
        flip applied where ``d = −1``); otherwise :meth:`forward` and :meth:`backward`
        are both applied and each chain takes its direction's (on numpy arrays the
        chains are split by direction instead: the same values). Subclasses may
        override it with something faster (leapfrog folds ``d`` into the momentum).
        """
        back = _as_direction(direction) < 0
        if known(back.any()) is False:  # host shortcuts: the same values
            return self.forward(state)
        if known(back.all()) is True:
            return self.backward(state)
        if self.has_flip:
            flipped = batch.where(back, self.flip(state), state)
            moved = self.forward(flipped)
            return batch.where(back, self.flip(moved), moved)
        if is_jax(back):  # both directions, then each chain takes its own
            return batch.where(back, self.backward(state), self.forward(state))
        idx_f = np.flatnonzero(~back)
        idx_b = np.flatnonzero(back)
        out = batch.put(state, idx_f, self.forward(batch.take(state, idx_f)))
        return batch.put(out, idx_b, self.backward(batch.take(state, idx_b)))

    def prepare(self, init: State, rng: np.random.Generator) -> State:
        """Turn a user's initial value into a state (validated). Identity here."""
        return init

    def draw(self, state: State) -> State:
        """What a trace records for a state: the whole state by default."""
        return state

    def describe(self) -> dict:
        """A JSON-able description of the map (for checkpoints and reports)."""
        return {"map": type(self).__name__}


def _as_direction(direction: Any) -> Any:
    """``direction`` as an array: a JAX value as it is, anything else through numpy."""
    return direction if is_jax(direction) else np.asarray(direction)


def log_det_jacobian_of(map_: ReversibleMap, state: State) -> np.ndarray:
    """``map_.log_det_jacobian(state)`` as floats, checked to be one value per chain.

    Raises
    ------
    ValueError
        Naming the map and the shape, if it is not ``(chains,)``.
    """
    out = map_.log_det_jacobian(state)
    xp = namespace(out)
    out = xp.asarray(out, dtype=xp.float64)
    n = batch.n_chains(state)
    if out.shape != (n,):
        raise ValueError(
            f"{type(map_).__name__}.log_det_jacobian returned shape {out.shape}, expected "
            f"({n},): one log |det ∂(L ζ)/∂ζ| per chain"
        )
    return out
