"""What a warm-up found and what it cost: :class:`WarmupResult` (one group of chains)
and :class:`GroupedWarmup` (groups run through an executor, each adapted on its own)."""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np


@attrs.frozen(eq=False)
class WarmupResult:
    """What warm-up found and what it cost.

    Attributes
    ----------
    step_size : float
        Adapted leapfrog step ``ε`` (of the leapfrog family, and its law, for a map
        with one).
    inverse_mass : array or None
        Adapted inverse mass matrix (vector: diagonal; matrix: dense).
    grad_evals : int array (chains,)
        Gradient evaluations spent in warm-up, per chain.
    n_steps : int
        Warm-up steps.
    first_stage_prob : float
        Mean ``C_0`` over the last quarter of warm-up (at the adapted values it
        is close to the target).
    n_leapfrog : int
        Leapfrog steps per rung after warm-up (the centre of the jittered lengths,
        for ``lahmc``'s default kernel; 1 for a map whose law draws the length,
        ``state_length_lahmc``'s).
    beta : float or None
        The refresh's ``β`` after warm-up (None: the kernel has no partial refresh).
    largest_eigenvalue : float or None
        ``λ_1`` of the last window's covariance in the coordinates of unit mass (1 for
        a well-fitted diagonal mass on a target without correlations); None when no
        window ran (only the step size adapted).
    adapted : tuple of str
        What warm-up adapted (names of :attr:`~ladder_mcmc.ladder.kernel.Ladder.adapt`);
        everything else was kept as given.
    wall_time : float
        Seconds the warm-up took.
    flip_fraction : float
        Fraction of momentum flips over the last quarter of warm-up.
    length_set : bool
        Whether warm-up set the leapfrog steps per rung (adapted, or from a
        ``trajectory_length``); otherwise ``n_leapfrog`` is the kernel's own.
    relocated : int array (chains,) or None
        How often each chain, idle (no rung in 20 steps in a row), was moved to another
        chain's state at a window's end (:mod:`~ladder_mcmc.hamiltonian.warmup.stuck`).
    """

    step_size: float
    inverse_mass: np.ndarray | None
    grad_evals: np.ndarray
    n_steps: int
    first_stage_prob: float
    n_leapfrog: int
    beta: float | None = None
    largest_eigenvalue: float | None = None
    adapted: tuple[str, ...] = ("step_size", "inverse_mass")
    wall_time: float = 0.0
    flip_fraction: float = 0.0
    length_set: bool = True  # checkpoints written before it set the length always
    relocated: np.ndarray | None = None

    @property
    def trajectory_length(self) -> float:
        """``ε M``: the length of one rung in simulation time (mean, when jittered)."""
        return float(self.step_size) * int(self.n_leapfrog)

    def apply(self, kernel: Any) -> Any:
        """``kernel`` with the values this warm-up adapted
        (:func:`~ladder_mcmc.hamiltonian.warmup.parameters.apply_warmup`)."""
        from ladder_mcmc.hamiltonian.warmup.parameters import apply_warmup

        return apply_warmup(kernel, self)

    def grouped(self, others: tuple[WarmupResult, ...]) -> GroupedWarmup:
        """The warm-ups of groups of chains (this one first, then ``others``) as one."""
        return GroupedWarmup((self, *others))

    def restored(self) -> WarmupResult:
        """The same result with its fields' Python types (after a checkpoint's round trip,
        which stores numbers as arrays)."""
        return attrs.evolve(
            self,
            step_size=float(self.step_size),
            n_steps=int(self.n_steps),
            first_stage_prob=float(self.first_stage_prob),
            n_leapfrog=int(self.n_leapfrog),
            beta=None if self.beta is None else float(self.beta),
            largest_eigenvalue=(
                None if self.largest_eigenvalue is None else float(self.largest_eigenvalue)
            ),
            adapted=tuple(str(name) for name in np.atleast_1d(self.adapted)),
            wall_time=float(self.wall_time),
            flip_fraction=float(self.flip_fraction),
            length_set=bool(self.length_set),
        )


@attrs.frozen(eq=False)
class GroupedWarmup:
    """Warm-up of chains run in groups (``sample(..., executor=..., warmup=W)``).

    Each group adapted its own kernel from its own chains. The attributes are
    :class:`WarmupResult`'s, with one entry per group where groups differ.

    Attributes
    ----------
    groups : tuple of WarmupResult
        Each group's warm-up, in the order of the chains.
    step_size : float array (groups,)
    inverse_mass : array (groups, dim) or (groups, dim, dim), or None
    grad_evals : int array (chains,)
        Gradient evaluations spent in warm-up, per chain (as in :class:`WarmupResult`).
    n_steps : int
        Warm-up steps (the same in every group).
    first_stage_prob : float array (groups,)
    n_leapfrog : int array (groups,)
    group_of_chain : int array (chains,)
        The group of each chain: ``step_size[group_of_chain]`` is each chain's step.
    """

    groups: tuple[WarmupResult, ...]

    @property
    def step_size(self) -> np.ndarray:
        return np.array([g.step_size for g in self.groups], dtype=float)

    @property
    def inverse_mass(self) -> np.ndarray | None:
        masses = [g.inverse_mass for g in self.groups]
        return None if any(m is None for m in masses) else np.stack(masses)

    @property
    def grad_evals(self) -> np.ndarray:
        return np.concatenate([g.grad_evals for g in self.groups])

    @property
    def n_steps(self) -> int:
        return int(self.groups[0].n_steps)

    @property
    def first_stage_prob(self) -> np.ndarray:
        return np.array([g.first_stage_prob for g in self.groups], dtype=float)

    @property
    def n_leapfrog(self) -> np.ndarray:
        return np.array([g.n_leapfrog for g in self.groups], dtype=np.int64)

    def _unless_missing(self, name: str) -> np.ndarray | None:
        """Each group's ``name`` as a float array; None if any group has none."""
        values = [getattr(g, name) for g in self.groups]
        return None if any(v is None for v in values) else np.array(values, dtype=float)

    @property
    def beta(self) -> np.ndarray | None:
        return self._unless_missing("beta")

    @property
    def trajectory_length(self) -> np.ndarray:
        return np.array([g.trajectory_length for g in self.groups], dtype=float)

    @property
    def adapted(self) -> tuple[str, ...]:
        return self.groups[0].adapted

    @property
    def wall_time(self) -> float:
        return max(g.wall_time for g in self.groups)

    @property
    def largest_eigenvalue(self) -> np.ndarray | None:
        return self._unless_missing("largest_eigenvalue")

    @property
    def flip_fraction(self) -> np.ndarray:
        return np.array([g.flip_fraction for g in self.groups], dtype=float)

    @property
    def length_set(self) -> bool:
        return self.groups[0].length_set

    @property
    def relocated(self) -> np.ndarray | None:
        values = [g.relocated for g in self.groups]
        return None if any(v is None for v in values) else np.concatenate(values)

    @property
    def group_of_chain(self) -> np.ndarray:
        sizes = [len(g.grad_evals) for g in self.groups]
        return np.repeat(np.arange(len(sizes)), sizes)


__all__ = ["GroupedWarmup", "WarmupResult"]
