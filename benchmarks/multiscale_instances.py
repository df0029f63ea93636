"""The multiscale leapfrogs against ``lahmc(target)`` on Neal's funnel, at equal gradient budgets.

Protocol: the 10-d funnel (``v ~ N(0, 9)``, ``x_i | v ~ N(0, e^v)``), 16 chains started
at exact draws, a budget of gradient evaluations per run (all chains, warm-up and the
laws' probes included: a counting target counts every gradient row), 3 seeds. Each
kernel runs in chunks of 25 steps, continuing from the last state, until the budget is
spent; the kept draws are those after warm-up (``lahmc`` only: its default warm-up).
Reported, median over the seeds (and the range):

* ESS of ``v`` (bulk) per 1000 gradients;
* the errors of the mean and variance of ``v`` (exact: 0 and 9);
* the fraction of draws with ``v < −5`` (exact: Φ(−5/3) = 0.0478), and per seed the
  chains that were both below and above ``−5`` ("in and out": a chain started in the
  neck that never leaves it adds 1/16 to the fraction without moving).

Kernels (settings chosen before measuring, from the target's scales, not tuned):

* ``lahmc``: ``lahmc(target)`` with every default (adapted by warm-up, whose gradients
  count against the budget); ``lahmc, warm-up free``: the same, the budget counting the
  sampling phase only;
* ``length (hint)``: :func:`~ladder_mcmc.hamiltonian.state_length.state_length_lahmc`,
  ``ε = 0.05`` (stable down to ``v ≈ −6``, where the scale is ``e^{−3}``), ``τ = 1.5``,
  ``N_max = 128``, the funnel's scale ``e^{v/2}`` as the hint;
* ``length (gradient)``: the same with the scale from the gradient;
* ``refined``: :func:`~ladder_mcmc.hamiltonian.refined_step.refined_lahmc`, ``ε = 0.4``,
  ``M = 6``, ``δ = 0.5``, ``ℓ_max = 4`` (finest step ``0.025``).

Run::

    python benchmarks/multiscale_instances.py              # budget 2e5, 3 seeds
    python benchmarks/multiscale_instances.py --quick      # budget 2e4, 1 seed
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
from ladder_mcmc.diagnostics import GradientCounter, ess_bulk
from ladder_mcmc.hamiltonian.refined_step import refined_lahmc
from ladder_mcmc.hamiltonian.state_length import state_length_lahmc
from ladder_mcmc.models import NealsFunnel as Funnel

NECK_FRACTION = 0.5 * math.erfc(5 / 3 / math.sqrt(2))  # P(v < −5) = Φ(−5/3)


KERNELS = {
    "lahmc": lambda t: lahmc(t),
    "lahmc, warm-up free": lambda t: lahmc(t),
    "length (hint)": lambda t: state_length_lahmc(
        t, 0.05, time=1.5, max_steps=128, scale=Funnel(10).local_scale
    ),
    "length (gradient)": lambda t: state_length_lahmc(t, 0.05, time=1.5, max_steps=128),
    "refined": lambda t: refined_lahmc(t, 0.4, n_steps=6, threshold=0.5, max_level=4),
}


def adapted(target, warm):
    """``lahmc(target)`` with the values its warm-up adapted (a jittered length, as adapted)."""
    return lahmc(
        target,
        step_size=warm.step_size,
        n_leapfrog=warm.n_leapfrog,
        beta=warm.beta,
        inverse_mass=warm.inverse_mass,
        length_jitter=1.0,
    )


def run(name: str, budget: int, seed: int, chains: int = 16, chunk: int = 25):
    """The kept draws of ``v`` (steps, chains) of a kernel within ``budget``, and its gradients."""
    counting = GradientCounter(Funnel(10))
    kernel = KERNELS[name](counting)
    init = Funnel(10).sample(chains, np.random.default_rng([seed, 0]))
    rng = np.random.default_rng([seed, 1])
    draws = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if name.startswith("lahmc"):
            trace = sample(kernel, init, chunk, seed=rng, checks=False)
            kernel = adapted(counting, trace.warmup)
        else:
            trace = sample(kernel, init, chunk, seed=rng, warmup=0, checks=False)
        # the warm-up's gradients (and prepare's): outside the budget of the "free" row
        free = counting.rows - int(np.sum(trace.grad_evals)) if "free" in name else 0
        draws.append(trace.positions[:, :, 0])
        while counting.rows - free < budget:
            trace = sample(kernel, trace.final, chunk, seed=rng, warmup=0, checks=False)
            draws.append(trace.positions[:, :, 0])
    return np.concatenate(draws), counting.rows - free


def measure(budget: int, seeds: list[int]) -> dict:
    rows = {}
    for name in KERNELS:
        per_seed = []
        for seed in seeds:
            v, used = run(name, budget, seed)
            per_seed.append(
                (
                    1000 * float(ess_bulk(v)) / used,
                    float(v.mean()),
                    float(v.var() - 9.0),
                    float((v < -5).mean()),
                    used,
                    v.size,
                    int(np.sum(((v < -5).mean(axis=0) > 0) & ((v < -5).mean(axis=0) < 1))),
                )
            )
        rows[name] = np.array(per_seed)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--budget", type=float, default=None)
    parser.add_argument("--seeds", type=int, default=None)
    args = parser.parse_args()
    budget = int(args.budget or (2e4 if args.quick else 2e5))
    seeds = list(range(args.seeds or (1 if args.quick else 3)))
    rows = measure(budget, seeds)
    print(f"10-d funnel, 16 chains, budget {budget} gradients, seeds {seeds}")
    print(f"exact: E v = 0, Var v = 9, P(v < -5) = {NECK_FRACTION:.4f}")
    header = f"{'kernel':<20}{'ESS/1000 grads':>22}{'mean err':>22}{'var err':>24}"
    print(header + f"{'v<-5 fraction':>24}{'gradients':>12}{'draws':>8}{'in and out':>12}")

    def cell(col, fmt):
        med, lo, hi = np.median(col), col.min(), col.max()
        return f"{med:{fmt}} [{lo:{fmt}}, {hi:{fmt}}]"

    for name, r in rows.items():
        print(
            f"{name:<20}{cell(r[:, 0], '6.2f'):>22}{cell(r[:, 1], '+6.2f'):>22}"
            f"{cell(r[:, 2], '+6.2f'):>24}{cell(r[:, 3], '6.3f'):>24}"
            f"{np.median(r[:, 4]):>12.0f}{np.median(r[:, 5]):>8.0f}"
            f"{' '.join(str(int(k)) for k in r[:, 6]):>12}"
        )


if __name__ == "__main__":
    main()
