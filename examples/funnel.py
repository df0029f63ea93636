"""Neal's funnel: a trajectory length drawn from the position against ``lahmc(target)``.

The funnel (``v ~ N(0, 9)``, ``x_i | v ~ N(0, e^v)``, 10 dimensions) has scales from
``e^{−3}`` in the neck to ``e^{3}`` in the mouth: a step small enough for the neck needs
hundreds of steps to cross the mouth. ``state_length_lahmc``
(:mod:`ladder_mcmc.hamiltonian.state_length`) keeps one small step ``ε`` and draws
each step's number of leapfrog steps from a law of the position: ``n`` uniform on
``{⌈N/2⌉ … N}``, ``N(x) = clip(round(τ e^{v/2} / ε), 1, N_max)``, short trajectories
in the neck, long ones in the mouth. The law is part of the density at every rung
(docs/design.md §14), so the chain keeps the funnel exactly.

Both kernels start at exact draws; ``lahmc(target)`` runs its default warm-up. Printed
per kernel: gradients, the error of the mean and variance of ``v`` (exact 0 and 9) and
the fraction of draws with ``v < −5`` (exact ``Φ(−5/3) = 0.048``), which measures how
far into the neck the chains go.

Run::

    python examples/funnel.py            # 32 chains × 2 000 steps
    python examples/funnel.py --quick    # 8 chains × 200 steps, a few seconds
"""

from __future__ import annotations

import argparse
import math
import sys
import warnings
from pathlib import Path

import numpy as np

try:
    import ladder_mcmc  # noqa: F401
except ImportError:  # run from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ladder_mcmc import lahmc, sample
from ladder_mcmc.hamiltonian.state_length import state_length_lahmc
from ladder_mcmc.models import NealsFunnel as Funnel


def report(label: str, trace) -> None:
    v = trace.positions[:, :, 0]
    grads = int(np.sum(trace.grad_evals))
    warm = getattr(trace.warmup, "grad_evals", None)
    if warm is not None:
        grads += int(np.sum(warm))
    exact = 0.5 * math.erfc(5 / 3 / math.sqrt(2))
    print(
        f"{label:<28} gradients {grads:>9}  mean(v) error {v.mean():+.3f}  "
        f"var(v) error {v.var() - 9.0:+.3f}  P(v < -5) {(v < -5).mean():.4f} "
        f"(exact {exact:.4f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="8 chains × 200 steps")
    args = parser.parse_args()
    chains, steps = (8, 200) if args.quick else (32, 2000)
    target = Funnel(10)
    init = target.sample(chains, np.random.default_rng(0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the funnel's divergences and ESS warnings
        default = sample(lahmc(target), init, steps, seed=1, warmup=steps)
        kernel = state_length_lahmc(target, 0.05, time=1.5, max_steps=128, scale=target.local_scale)
        drawn = sample(kernel, init, steps, seed=1, warmup=0)
    print(f"Neal's funnel, 10-d, {chains} chains x {steps} steps (exact: E v = 0, Var v = 9)")
    report("lahmc(target), warm-up", default)
    report("state_length_lahmc", drawn)


if __name__ == "__main__":
    main()
