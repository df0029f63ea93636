"""Neal's funnel and the multiscale leapfrogs on it, for the tests (``NealsFunnel`` if present).

``v ~ N(0, s²)``, ``x_i | v ~ N(0, e^v)``; coordinates ``(v, x_1, …)``. The local funnel is
used until ``ladder_mcmc.models.NealsFunnel`` is merged; both have the same energy.
"""

from __future__ import annotations

import attrs
import numpy as np

from ladder_mcmc.hamiltonian.refined_step import refined_lahmc
from ladder_mcmc.hamiltonian.state_length import state_length_lahmc

try:
    from ladder_mcmc.models import NealsFunnel as Funnel
except ImportError:  # pragma: no cover - before the funnel branch is merged

    @attrs.frozen
    class Funnel:
        """``E = v² / (2 s²) + n v / 2 + ½ e^{−v} Σ x_i²``, ``n = dim − 1``."""

        dim: int = 10
        scale: float = 3.0

        def energy_and_grad(self, x):
            x = np.asarray(x, dtype=float)
            v, rest = x[:, 0], x[:, 1:]
            n = self.dim - 1
            with np.errstate(over="ignore", invalid="ignore"):
                w = np.exp(-v)
                half_ss = 0.5 * np.einsum("ij,ij->i", rest, rest)
                e = v * v / (2 * self.scale**2) + 0.5 * n * v + w * half_ss
                g = np.empty_like(x)
                g[:, 0] = v / self.scale**2 + 0.5 * n - w * half_ss
                g[:, 1:] = rest * w[:, None]
            return e, g

        def energy(self, x):
            return self.energy_and_grad(x)[0]

        def grad(self, x):
            return self.energy_and_grad(x)[1]

        def sample(self, n, rng):
            v = self.scale * rng.standard_normal(n)
            x = np.exp(v / 2)[:, None] * rng.standard_normal((n, self.dim - 1))
            return np.concatenate([v[:, None], x], axis=1)


def neck_scale(x):
    """The funnel's local scale ``e^{v/2}`` (the scale hint of ``LocalLengthLaw``)."""
    return np.exp(0.5 * np.asarray(x)[:, 0])


def length_kernel():
    """On the 3-d funnel: short trajectories, two rungs; ``n`` ranges over 1 … 32."""
    return state_length_lahmc(
        Funnel(3), 0.2, time=1.0, max_steps=32, look_ahead=2, scale=neck_scale
    )


def refined_kernel(step_size=2.0):
    """On the 3-d funnel: a coarse step refined up to 8 times; the level varies."""
    return refined_lahmc(Funnel(3), step_size, n_steps=2, threshold=0.5, max_level=3, look_ahead=2)
