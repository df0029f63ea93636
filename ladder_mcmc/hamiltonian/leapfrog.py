"""The leapfrog map: Hamiltonian dynamics as a reversible map of the ladder.

* :class:`PhaseState` — the extended state ``ζ = (x, v)`` with the potential
  energy and its gradient cached, so that no rung is ever recomputed;
* :class:`Leapfrog` — the map ``L(ε, M)``: ``M`` leapfrog steps of size ``ε``
  (paper, section 3.3.2), with the momentum flip ``F`` (section 3.3.1).

The paper's two samplers built on it, :func:`~ladder_mcmc.hamiltonian.samplers.hmc`
and :func:`~ladder_mcmc.hamiltonian.samplers.lahmc` (sections 3.4, 4), are in
:mod:`ladder_mcmc.hamiltonian.samplers`.
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from ladder_mcmc.arrays import TRACED, fori_loop, is_traced, namespace
from ladder_mcmc.hamiltonian.kinetic import KineticEnergy
from ladder_mcmc.hamiltonian.metrics import Metric
from ladder_mcmc.ladder import batch
from ladder_mcmc.ladder.maps import ReversibleMap
from ladder_mcmc.models.targets import Target, check_target, energy_and_grad, gradient
from ladder_mcmc.validation import attrs_converter, attrs_validator, positive_finite, positive_int


@attrs.frozen(eq=False)
class PhaseState:
    """A batch of phase-space points.

    Attributes
    ----------
    x : array (chains, dim)
        Positions.
    v : array (chains, dim)
        Momenta (on the ladder, the physical momentum is ``d·v``).
    energy : array (chains,)
        Potential energy ``E(x)`` (negative log target density, nats).
    grad : array (chains, dim)
        ``∂E/∂x`` at ``x``.
    """

    x: np.ndarray
    v: np.ndarray
    energy: np.ndarray
    grad: np.ndarray


def _carry(state: PhaseState, out: PhaseState) -> PhaseState:
    """``out`` with the auxiliary fields of ``state``'s class carried over unchanged.

    A subclass of :class:`PhaseState` (e.g. ``LiftedPhaseState.lift``,
    ``JitteredPhaseState.step_scale``) keeps its extra fields through the map.
    """
    if type(state) is PhaseState:
        return out
    return batch.replace(state, x=out.x, v=out.v, energy=out.energy, grad=out.grad)


@attrs.frozen(eq=False)
class Leapfrog(ReversibleMap):
    """``M`` leapfrog (Störmer–Verlet) steps of size ``ε``: the map ``L(ε, M)``.

    Reversible through the momentum flip (``L⁻¹ = F L F``), volume preserving,
    and only approximately energy conserving (paper, section 3.3.2). One
    application costs ``M`` gradient evaluations and one energy evaluation.

    Parameters
    ----------
    target : Target
        The energy function ``E(x)`` and its gradient.
    step_size : float
        ``ε > 0``, in units of ``x`` per unit momentum (with ``M = I``).
    n_steps : int
        ``M ≥ 1``, the number of leapfrog steps per rung.
    metric : KineticEnergy
        Mass matrix (:class:`~ladder_mcmc.hamiltonian.metrics.Metric`; identity, the paper's
        choice, by default) or another kinetic energy
        (:class:`~ladder_mcmc.hamiltonian.kinetic.PowerKinetic`).

    Notes
    -----
    **Extension point.** ``forward`` and ``move`` do all their integration
    through the public method :meth:`integrate`, ``(x, v, grad) → PhaseState``:
    a subclass that overrides ``integrate`` (and ``cost``) gets another
    integrator with everything else — the flip, ``move``, ``log_density``,
    ``prepare``, validation, the metric — unchanged. The override must be a
    *symmetric* (palindromic) composition of kicks ``v ← v − bε∇E(x)`` and
    drifts ``x ← x + aε M⁻¹v`` (or any volume-preserving map ``Φ`` with
    ``F Φ F = Φ⁻¹``), so that the map stays a valid ladder map; see
    :mod:`ladder_mcmc.hamiltonian.integrators` (``Yoshida4``, ``McLachlan2``) and
    ``docs/tutorials/custom-map.md``. Check a new one with
    :func:`ladder_mcmc.verify.map_contract.assert_map`.

    A subclass of :class:`PhaseState` with auxiliary fields keeps them through
    ``forward`` and ``move`` unchanged (``LiftedLeapfrog``'s lift,
    ``JitteredLeapfrog``'s step factor, which its :meth:`advance` reads).

    **Backends.** Written against the namespace of its inputs (:mod:`ladder_mcmc.arrays`):
    the same code runs on numpy arrays and, traced, inside the compiled loop, where
    ``step_size`` and ``n_steps`` are traced leaves (a warm-up changes them without a new
    compilation) and the steps are a ``fori_loop``.
    """

    target: Target = attrs.field(validator=attrs_validator(check_target))
    step_size: float = attrs.field(
        converter=attrs_converter(positive_finite, "step_size"), metadata=TRACED
    )
    n_steps: int = attrs.field(converter=attrs_converter(positive_int, "n_steps"), metadata=TRACED)
    metric: KineticEnergy = attrs.field(factory=Metric)

    @metric.validator
    def _check_metric(self, _attribute, value) -> None:
        if not isinstance(value, KineticEnergy):
            hint = (
                " (for a mass matrix, Metric(inverse_mass))"
                if isinstance(value, (np.ndarray, list, tuple))
                else ""
            )
            raise ValueError(
                "metric must be a kinetic energy (a Metric, a PowerKinetic, or any "
                f"KineticEnergy){hint}, got {type(value).__name__}"
            )

    @property
    def cost(self) -> int:  # type: ignore[override]
        n = self.n_steps
        return n if is_traced(n) else int(n)  # traced inside a compiled warm-up

    @property
    def kinetic_energy(self) -> KineticEnergy:
        """:attr:`metric`, the kinetic energy integrated."""
        return self.metric

    def log_density(self, state: PhaseState) -> np.ndarray:
        """``-H(x, v) = -E(x) - ½ vᵀ M⁻¹ v`` (paper, joint density of section 3.1)."""
        return -(state.energy + self.metric.kinetic(state.v))

    def flip(self, state: PhaseState) -> PhaseState:
        """``F (x, v) = (x, -v)``."""
        return batch.replace(state, v=-state.v)

    def forward(self, state: PhaseState) -> PhaseState:
        return _carry(state, self.advance(state, state.v))

    def move(self, state: PhaseState, direction: np.ndarray) -> PhaseState:
        """``L^d``: one batched integration with the momentum multiplied by ``d``."""
        # d = ±1 exactly, so multiplying by it is exact (no test for "all +1":
        # on the ladder the directions are mixed, and the test costs as much)
        v = state.v
        if type(direction) is np.ndarray and type(v) is np.ndarray:  # the host
            d = direction[:, None].astype(v.dtype)
        else:
            d = namespace(v, direction).asarray(direction)[:, None].astype(v.dtype)
        out = self.advance(state, d * state.v)
        return _carry(state, PhaseState(x=out.x, v=d * out.v, energy=out.energy, grad=out.grad))

    def advance(self, state: PhaseState, v: np.ndarray) -> PhaseState:
        """One application from ``state``'s position (and cached gradient) with momentum ``v``.

        :meth:`integrate` by default; a subclass whose step depends on an auxiliary
        field of the state overrides this
        (:class:`ladder_mcmc.hamiltonian.jitter.JitteredLeapfrog`).
        """
        return self.integrate(state.x, v, state.grad)

    def integrate(self, x: np.ndarray, v: np.ndarray, grad: np.ndarray) -> PhaseState:
        """Integrate ``n_steps`` steps forward from ``(x, v)``; the map ``L`` without the direction.

        Parameters
        ----------
        x, v : arrays (chains, dim)
            Positions and momenta (``v`` already multiplied by the direction ``d``
            when called from :meth:`move`). Not modified.
        grad : array (chains, dim)
            ``∂E/∂x`` at ``x`` (cached in the state, so the first kick needs no
            gradient evaluation).

        Returns
        -------
        PhaseState
            The end point, with ``E`` and ``∂E/∂x`` evaluated there (the one
            ``energy_and_grad`` call of the application). Leapfrog: ``n_steps``
            steps of kick ``ε/2``, drift ``ε``, kick ``ε/2``, with the inner
            half kicks merged (``n_steps`` gradient evaluations in all).

        Override this (and ``cost``) to change the integrator; see the class notes.
        """
        return self.leapfrog_steps(x, v, grad, self.step_size)

    def leapfrog_steps(
        self, x: np.ndarray, v: np.ndarray, grad: np.ndarray, eps: float | np.ndarray
    ) -> PhaseState:
        """:meth:`integrate` with the step ``eps`` given: a float, or one per chain as a
        (chains, 1) column (:class:`ladder_mcmc.hamiltonian.jitter.JitteredLeapfrog`)."""
        metric = self.metric
        target = self.target
        n = self.n_steps
        host = type(n) is int and type(x) is np.ndarray and type(v) is np.ndarray
        if host and type(metric) is Metric and x.dtype == v.dtype == grad.dtype == _FLOAT:
            return _host_steps(target, metric, x, v, grad, eps, n)
        vel = metric.velocity
        v = v - (0.5 * eps) * grad
        if host:
            for _ in range(n - 1):  # on the host: the steps below as a plain loop
                x = x + eps * vel(v)
                v = v - eps * gradient(target, x)
        else:

            def step(_, xv):  # a drift, the gradient there, a whole kick (the merged half kicks)
                x, v = xv
                x = x + eps * vel(v)
                return x, v - eps * gradient(target, x)

            x, v = fori_loop(0, n - 1, step, (x, v))
        x = x + eps * vel(v)
        e, g = energy_and_grad(target, x)
        v = v - (0.5 * eps) * g
        return PhaseState(x=x, v=v, energy=e, grad=g)

    def prepare(self, init, rng: np.random.Generator) -> PhaseState:
        """Build a phase state from positions (momentum drawn from ``N(0, M)``).

        Raises
        ------
        ValueError
            If the positions are not a finite (chains, dim) array matching the
            target's dimension, or the energy or gradient there is non-finite
            or of the wrong shape.
        """
        if isinstance(init, PhaseState):
            x, v = np.asarray(init.x, dtype=float), np.asarray(init.v, dtype=float)
        else:
            x, v = np.asarray(init, dtype=float), None
        if x.ndim != 2 or x.shape[0] < 1 or x.shape[1] < 1:
            raise ValueError(f"init must be an array of shape (chains, dim), got shape {x.shape}")
        dim = getattr(self.target, "dim", None)
        if dim is not None and x.shape[1] != dim:
            raise ValueError(
                f"init has dimension {x.shape[1]} but the target has dim={dim} "
                f"(init shape {x.shape})"
            )
        if self.metric.dim is not None and self.metric.dim != x.shape[1]:
            raise ValueError(f"inverse_mass has dimension {self.metric.dim}, init has {x.shape[1]}")
        if not np.all(np.isfinite(x)):
            bad = np.flatnonzero(~np.isfinite(x).all(axis=1))
            raise ValueError(f"init must be finite; chains {bad.tolist()} are not")
        if v is None:
            v = self.metric.sample_momentum(rng, x.shape)
        elif v.shape != x.shape or not np.all(np.isfinite(v)):
            raise ValueError(f"init.v must be finite with shape {x.shape}, got {v.shape}")
        with np.errstate(all="ignore"):
            e, g = energy_and_grad(self.target, x)
        if e.shape != (x.shape[0],):
            raise ValueError(f"target.energy must return shape {(x.shape[0],)}, got {e.shape}")
        if g.shape != x.shape:
            raise ValueError(f"target.grad must return shape {x.shape}, got {g.shape}")
        bad = np.flatnonzero(~(np.isfinite(e) & np.isfinite(g).all(axis=1)))
        if bad.size:
            raise ValueError(
                f"the energy or gradient is not finite at the initial positions of chains "
                f"{bad.tolist()}"
            )
        return PhaseState(x=x, v=v, energy=e, grad=g)

    def draw(self, state: PhaseState) -> np.ndarray:
        """Traces record positions only."""
        return state.x

    def adaptation(self, kernel: Any, settings: Any, init: Any, checks: bool = True) -> Any:
        """The warm-up of a kernel on this map: the step size, the mass, the length and β
        it leaves unset (:class:`~ladder_mcmc.hamiltonian.warmup.adaptation.HMCAdaptation`),
        or ``None`` for none."""
        from ladder_mcmc.hamiltonian.warmup.adaptation import HMCAdaptation

        x = getattr(getattr(init, "state", init), "x", init)
        n_chains, dim = np.shape(x)[0], np.shape(x)[-1]
        return HMCAdaptation.for_kernel(kernel, settings, n_chains, dim, checks)

    def describe(self) -> dict:
        return {
            "map": "Leapfrog",
            "target": type(self.target).__name__,
            "step_size": float(self.step_size),
            "n_steps": int(self.n_steps),
            **self.metric.describe(),
        }


_FLOAT = np.dtype(np.float64)


def _host_steps(
    target: Target, metric: Metric, x: np.ndarray, v: np.ndarray, grad: np.ndarray, eps: Any, n: int
) -> PhaseState:
    """:meth:`Leapfrog.leapfrog_steps` on the host, for a :class:`Metric` and float64 arrays: the
    same operations in the same order, each written over a temporary of its own (``x + εu``
    as ``εu += x``, ``v − εg`` into ``εg``), so that a step allocates two arrays, not four;
    with the identity mass the velocity is the momentum itself (what ``velocity`` returns).
    No array it is given, nor one the target returns, is written to."""
    identity = metric.inverse_mass is None
    subtract = np.subtract  # (a − b into b: the third argument is the output)
    kick = (0.5 * eps) * grad
    v = subtract(v, kick, kick)
    for _ in range(n - 1):
        drift = eps * (v if identity else metric.velocity(v))
        drift += x
        x = drift
        kick = eps * gradient(target, x)
        v = subtract(v, kick, kick)
    drift = eps * (v if identity else metric.velocity(v))
    drift += x
    x = drift
    e, g = energy_and_grad(target, x)
    kick = (0.5 * eps) * g
    v = subtract(v, kick, kick)
    return PhaseState(x=x, v=v, energy=e, grad=g)


# the fields' annotations as objects, so that subclasses defined in other modules
# (Yoshida4, JitteredLeapfrog, ...) carry resolvable annotations (the API reference)
attrs.resolve_types(Leapfrog)
