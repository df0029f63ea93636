"""Neal's funnel (``ladder_mcmc.models.NealsFunnel``) and the multiscale leapfrogs on it,
for the tests.

``v ~ N(0, s²)``, ``x_i | v ~ N(0, e^v)``; coordinates ``(v, x_1, …)``.
"""

from __future__ import annotations

from ladder_mcmc.hamiltonian.refined_step import refined_lahmc
from ladder_mcmc.hamiltonian.span_step import span_lahmc
from ladder_mcmc.hamiltonian.state_length import state_length_lahmc
from ladder_mcmc.models import NealsFunnel as Funnel

neck_scale = Funnel().local_scale  # e^{v/2}, the scale hint of LocalLengthLaw


def length_kernel():
    """On the 3-d funnel: short trajectories, two rungs; ``n`` ranges over 1 … 32."""
    return state_length_lahmc(
        Funnel(3), 0.2, time=1.0, max_steps=32, look_ahead=2, scale=neck_scale
    )


def refined_kernel(step_size=2.0):
    """On the 3-d funnel: a coarse step refined up to 8 times; the level varies."""
    return refined_lahmc(Funnel(3), step_size, n_steps=2, threshold=0.5, max_level=3, look_ahead=2)


def span_kernel(step_size=1.0, beta=0.5):
    """On the 3-d funnel: the gradient-drawn level on levels −2 … 2 (a coarse step, so
    that the levels differ: refined where the funnel narrows, lengthened where it widens)."""
    return span_lahmc(
        Funnel(3),
        step_size,
        n_steps=2,
        beta=beta,
        scale=1.0,
        width=1.0,
        min_level=-2,
        max_level=2,
        look_ahead=2,
    )
