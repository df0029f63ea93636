"""The exact harmonic flow: a rotation in ``(x, v)`` used as a map for any target.

``L`` is the exact time-``t`` flow of the *reference* Hamiltonian
``H₀(x, v) = ½ ω² |x|² + ½ |v|²``, a rotation of each ``(x_i, v_i/ω)`` plane by
the angle ``ωt``:

    x' = x cos ωt + (v/ω) sin ωt,        v' = −x ω sin ωt + v cos ωt.

It is linear with determinant 1 (volume preserving) and reversible through the
momentum flip (``F L F = L⁻¹``), so it is a valid ladder map for *any* target
``p(x, v) ∝ exp(−E(x) − ½|v|²)`` — but it conserves ``H₀``, not the target's
``H = E + ½|v|²``, so the ladder's rule corrects for the difference. No
gradients are needed: one energy evaluation per application.
"""

from __future__ import annotations

import math

import attrs
import numpy as np

from ladder_mcmc.arrays import namespace
from ladder_mcmc.hamiltonian.leapfrog import PhaseState
from ladder_mcmc.hamiltonian.metrics import Metric
from ladder_mcmc.ladder.maps import ReversibleMap
from ladder_mcmc.models.targets import Target, energy_and_grad
from ladder_mcmc.validation import attrs_converter, positive_finite

_IDENTITY = Metric()


@attrs.frozen(eq=False)
class HarmonicFlow(ReversibleMap):
    """Rotation by ``ωt`` in every ``(x_i, v_i/ω)`` plane: the exact flow of ``½ω²x² + ½v²``.

    States are :class:`~ladder_mcmc.hamiltonian.leapfrog.PhaseState` (the ``grad`` field is not
    used and holds zeros), so :class:`~ladder_mcmc.hamiltonian.momentum.MomentumRefresh`
    works unchanged. The log density is the target's ``−E(x) − ½|v|²``.

    Parameters
    ----------
    target : Target
        Only ``energy(x)`` is used.
    omega : float
        Angular frequency ``ω > 0`` of the reference oscillator (units: 1/time).
    time : float
        Duration ``t > 0`` of one application; the rotation angle is ``ωt``.

    Attributes
    ----------
    cost : int
        1: one energy evaluation per application (no gradients).

    Examples
    --------
    >>> import numpy as np
    >>> from ladder_mcmc import FunctionTarget
    >>> quartic = FunctionTarget(lambda x: (x**4).sum(1) / 4, lambda x: x**3, dim=1)
    >>> flow = HarmonicFlow(quartic, omega=1.0, time=np.pi / 2)
    >>> z = flow.prepare(np.array([[1.0]]), np.random.default_rng(0))
    >>> z = PhaseState(x=z.x, v=np.array([[0.0]]), energy=z.energy, grad=z.grad)
    >>> np.round(flow.forward(z).v, 12)  # a quarter turn: x = 1 becomes v = -1
    array([[-1.]])
    """

    target: Target
    omega: float = attrs.field(converter=attrs_converter(positive_finite, "omega"))
    time: float = attrs.field(converter=attrs_converter(positive_finite, "time"))

    cost = 1

    @property
    def kinetic_energy(self) -> Metric:
        """``½|v|²``: the identity :class:`~ladder_mcmc.hamiltonian.metrics.Metric`."""
        return _IDENTITY

    def log_density(self, state: PhaseState) -> np.ndarray:
        """``−E(x) − ½|v|²``."""
        xp = namespace(state.v)
        return -(state.energy + 0.5 * xp.einsum("ij,ij->i", state.v, state.v))

    def flip(self, state: PhaseState) -> PhaseState:
        """``F(x, v) = (x, −v)``."""
        return attrs.evolve(state, v=-state.v)

    def forward(self, state: PhaseState) -> PhaseState:
        angle = float(self.omega) * float(self.time)
        c, s, w = math.cos(angle), math.sin(angle), float(self.omega)
        x = c * state.x + (s / w) * state.v
        v = -(s * w) * state.x + c * state.v
        xp = namespace(x)
        if xp is np:
            energy = np.asarray(self.target.energy(x), dtype=float)
        else:  # a JAX target's energy (its gradient, unused, is compiled away)
            energy = energy_and_grad(self.target, x)[0]
        return PhaseState(x=x, v=v, energy=energy, grad=xp.zeros_like(x))

    def move(self, state: PhaseState, direction: np.ndarray) -> PhaseState:
        """``L^d = F^{(1−d)/2} L F^{(1−d)/2}``: the momentum multiplied by ``d = ±1``
        (exact) before and after one rotation of the whole batch."""
        xp = namespace(state.v, direction)
        d = xp.asarray(direction)[:, None].astype(state.v.dtype)
        out = self.forward(attrs.evolve(state, v=d * state.v))
        return attrs.evolve(out, v=d * out.v)

    def prepare(self, init, rng: np.random.Generator) -> PhaseState:
        """Positions (chains, dim) → phase state with ``v ~ N(0, I)``.

        A :class:`~ladder_mcmc.hamiltonian.leapfrog.PhaseState` is accepted as is (validated).

        Raises
        ------
        ValueError
            If the positions (or momenta) are not a finite (chains, dim) array,
            or the energy there is not finite or of the wrong shape (naming the
            chains at fault).
        """
        if isinstance(init, PhaseState):
            x, v = np.asarray(init.x, dtype=float), np.asarray(init.v, dtype=float)
        else:
            x, v = np.asarray(init, dtype=float), None
        if x.ndim != 2 or x.shape[0] < 1 or x.shape[1] < 1:
            raise ValueError(f"init must be an array of shape (chains, dim), got shape {x.shape}")
        if not np.all(np.isfinite(x)):
            bad = np.flatnonzero(~np.isfinite(x).all(axis=1))
            raise ValueError(f"init must be finite; chains {bad.tolist()} are not")
        if v is None:
            v = rng.standard_normal(x.shape)
        elif v.shape != x.shape:
            raise ValueError(f"init.v must have shape {x.shape}, got {v.shape}")
        elif not np.all(np.isfinite(v)):
            bad = np.flatnonzero(~np.isfinite(v).all(axis=1))
            raise ValueError(f"init.v must be finite; chains {bad.tolist()} are not")
        with np.errstate(all="ignore"):
            energy = np.asarray(self.target.energy(x), dtype=float)
        if energy.shape != (x.shape[0],):
            raise ValueError(f"target.energy must return shape ({x.shape[0]},), got {energy.shape}")
        bad = np.flatnonzero(~np.isfinite(energy))
        if bad.size:
            raise ValueError(
                f"the energy is not finite at the initial positions of chains {bad.tolist()}"
            )
        return PhaseState(x=x, v=v, energy=energy, grad=np.zeros_like(x))

    def draw(self, state: PhaseState) -> np.ndarray:
        """Traces record positions."""
        return state.x

    def describe(self) -> dict:
        return {
            "map": "HarmonicFlow",
            "target": type(self.target).__name__,
            "omega": float(self.omega),
            "time": float(self.time),
        }
