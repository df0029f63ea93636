"""The shift on a cycle of ``n`` states: a discrete reversible map.

``L i = i + 1 (mod n)``, ``L⁻¹ i = i − 1 (mod n)``. With a direction ``d`` and
the ladder this is the lifted random walk of Diaconis, Holmes & Neal (2000):
with the direction resampled every step (``DirectionRefresh(1)``) the chain is
the simple random walk on the cycle, which needs about ``n²`` steps to mix;
with the direction kept (resampled with probability about ``1/n``) it sweeps
round the cycle and mixes in about ``n`` steps (``examples/lifted_cycle.py``).
"""

from __future__ import annotations

import attrs
import numpy as np

from ladder_mcmc.arrays import is_jax, namespace
from ladder_mcmc.ladder.maps import ReversibleMap
from ladder_mcmc.validation import positive_int


def _as_log_weights(value) -> np.ndarray | None:
    if value is None:
        return None
    w = np.asarray(value, dtype=float)
    if w.ndim != 1 or not np.all(np.isfinite(w)) or np.any(w <= 0):
        raise ValueError(f"weights must be a 1-d array of finite positive numbers, got {value!r}")
    return np.log(w)


def _as_states(state):
    """Integer states as an array (a JAX value as it is)."""
    return state if is_jax(state) else np.asarray(state)


@attrs.frozen(eq=False)
class CycleShift(ReversibleMap):
    """The shift ``i → i + 1 (mod n)`` on ``{0, …, n−1}`` with weights ``w_i``.

    States are integer arrays of shape ``(chains,)`` (numpy's or JAX's: the map is
    exact integer arithmetic, the same in both loops). The target is ``p(i) ∝ w_i``
    (uniform by default). The map is a permutation, so it is trivially volume
    preserving (counting measure); its inverse is given directly (no flip is needed on
    the ladder).

    Parameters
    ----------
    n : int
        Number of states on the cycle, ``n ≥ 2``.
    weights : array (n,), optional
        Positive unnormalised weights ``w_i``; uniform if omitted.

    Attributes
    ----------
    cost : int
        1 (one density look-up per application; there are no gradients).

    References
    ----------
    P. Diaconis, S. Holmes, R. M. Neal (2000), Analysis of a nonreversible
    Markov chain sampler, Annals of Applied Probability 10(3), 726-752.

    Examples
    --------
    >>> import numpy as np
    >>> from ladder_mcmc import DirectionRefresh, LookAhead, sample
    >>> shift = CycleShift(5)
    >>> shift.move(np.array([0, 4, 2]), np.array([1, 1, -1]))
    array([1, 0, 1])
    >>> kernel = LookAhead(shift, max_rungs=1, refresh=DirectionRefresh(0.2))
    >>> trace = sample(kernel, np.zeros(4, dtype=int), 10, seed=0)
    >>> trace.states.shape
    (10, 4)
    """

    n: int = attrs.field()
    weights: np.ndarray | None = attrs.field(default=None, eq=False)
    _log_w: np.ndarray | None = attrs.field(init=False, default=None, repr=False)

    def __attrs_post_init__(self) -> None:
        positive_int("n", self.n, minimum=2)
        log_w = _as_log_weights(self.weights)
        if log_w is not None and log_w.shape != (self.n,):
            raise ValueError(f"weights must have shape ({self.n},), got {log_w.shape}")
        object.__setattr__(self, "_log_w", log_w)

    cost = 1

    def forward(self, state: np.ndarray) -> np.ndarray:
        return (_as_states(state) + 1) % self.n

    def backward(self, state: np.ndarray) -> np.ndarray:
        return (_as_states(state) - 1) % self.n

    def log_density(self, state: np.ndarray) -> np.ndarray:
        """``log w_i`` (0 for the uniform cycle)."""
        state = _as_states(state)
        if self._log_w is None:
            return namespace(state).zeros(state.shape[0])
        xp = namespace(state, self._log_w)
        return xp.asarray(self._log_w)[state]

    def prepare(self, init, rng: np.random.Generator) -> np.ndarray:
        """Validate initial states: integers in ``[0, n)``, shape ``(chains,)``.

        Raises
        ------
        ValueError
            If ``init`` is not a 1-d integer array with entries in ``[0, n)``.
        """
        arr = np.asarray(init)
        if arr.ndim != 1 or arr.size < 1 or not np.issubdtype(arr.dtype, np.integer):
            raise ValueError(f"init must be a 1-d integer array of states, got {init!r}")
        if np.any((arr < 0) | (arr >= self.n)):
            raise ValueError(f"init states must lie in [0, {self.n}), got {arr.tolist()}")
        return arr.astype(np.int64)

    def describe(self) -> dict:
        return {"map": "CycleShift", "n": int(self.n), "uniform": self._log_w is None}
