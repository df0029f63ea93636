"""Ladder topologies on the paper's targets: transition fractions, gradients to autocorrelation ½.

Every shipped rule on the leapfrog ladder with the paper's Table 1 settings
(ε = 1, M = 10, K = 4 where the rule has a K, β ∈ {1, 0.1}; section 5), on the
2-d and 100-d ill-conditioned Gaussians and the 2-d rough well, against HMC
(``LookAheadRule(1)``) and LAHMC (``LookAheadRule(4)``):

* transition fractions (F = flip, L1..L4, stay) over all steps and chains;
* gradient evaluations per chain (backward rungs included) until the
  autocorrelation falls to 0.5 (``ladder_mcmc.diagnostics``: known zero mean,
  pooled over dimensions and chains, lags up to half the run).

Chains start at exact draws (``ladder_mcmc.paper.settings.run``), so no
burn-in is needed; the same seed key is used for every rule of a (target, β)
pair (common starting points). ``--delta-sweep`` instead runs
``PersistentUniformRule(4, δ)`` for several δ (how the default δ was chosen).

Run (about 20 minutes on one core at the default sizes)::

    nice -n 10 python benchmarks/topologies.py [--chains 100 --steps 4000] [--out results.json]
    nice -n 10 python benchmarks/topologies.py --delta-sweep
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from functools import partial

try:
    import ladder_mcmc  # noqa: F401
except ImportError:  # run from a checkout without installing
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))
from ladder_mcmc import Ladder, Leapfrog, MomentumRefresh
from ladder_mcmc.diagnostics import autocorrelation_vs_grads, grads_to_threshold
from ladder_mcmc.ladder import (
    LookAheadRule,
    PersistentUniformRule,
    ReducedFlipLookAheadRule,
    ReducedFlipRule,
)
from ladder_mcmc.paper import settings
from ladder_mcmc.paper.figure2 import thin_for

RULES = {
    "HMC": lambda: LookAheadRule(1),
    "LAHMC": lambda: LookAheadRule(4),
    "ReducedFlip": lambda: ReducedFlipRule(),
    "ReducedFlipLA(4)": lambda: ReducedFlipLookAheadRule(4),
    "PersistentU(1)": lambda: PersistentUniformRule(1),
    "PersistentU(4)": lambda: PersistentUniformRule(4),
}
DELTAS = (0.01, 0.03, 0.1, 0.3, 1.0)
# With full momentum refresh (β = 1) the Gaussians' slow direction (σ = 1000) needs far
# more gradients than the other conditions to reach ρ = 0.5: longer runs there.
STEPS_FACTOR = {("gauss2", 1.0): 10, ("gauss100", 1.0): 5}


def run_one(target_name: str, rule, beta: float, chains: int, steps: int, seed: int) -> dict:
    target = settings.TARGETS[target_name]()
    kernel = Ladder(
        Leapfrog(target, settings.STEP_SIZE, settings.N_LEAPFROG), rule, MomentumRefresh(beta)
    )
    start = time.perf_counter()
    trace = settings.run(
        kernel, target, chains, steps, seed, ("topologies", target_name, beta), thin_for(steps)
    )
    grads, rho = autocorrelation_vs_grads(trace, max_lag=steps // 2, mean=0.0)
    g50 = grads_to_threshold(grads, rho, 0.5)
    return {
        "target": target_name,
        "beta": beta,
        "rule": rule.describe(),
        "fractions": trace.transition_fractions(),
        "grads_per_step": float(trace.grad_evals_per_step.mean()),
        "grads_to_half": g50 if math.isfinite(g50) else None,
        "chains": chains,
        "steps": steps,
        "seconds": time.perf_counter() - start,
    }


def fmt_fractions(fr: dict) -> str:
    return " ".join(f"{k} {v:.3f}" for k, v in fr.items())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chains", type=int, default=100)
    parser.add_argument("--steps", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--delta-sweep", action="store_true")
    parser.add_argument("--betas", type=float, nargs="+", default=list(settings.BETAS))
    parser.add_argument("--targets", nargs="+", default=list(settings.TARGETS))
    parser.add_argument("--deltas", type=float, nargs="+", default=list(DELTAS))
    parser.add_argument("--out", help="write the results as JSON here")
    args = parser.parse_args(argv)
    if args.delta_sweep:
        rules = {
            f"PersistentU(4) δ={d:g}": partial(PersistentUniformRule, 4, d) for d in args.deltas
        }
        rules["LAHMC"] = RULES["LAHMC"]
    else:
        rules = RULES
    rows = []
    print(f"{args.chains} chains, eps=1, M=10, started at exact draws")
    print("| target | β | rule | steps | transition fractions | grads/step | grads to ρ=0.5 |")
    print("|---|---|---|---|---|---|---|")
    for target_name in args.targets:
        for beta in args.betas:
            for name, make in rules.items():
                steps = args.steps * STEPS_FACTOR.get((target_name, beta), 1)
                r = run_one(target_name, make(), beta, args.chains, steps, args.seed)
                r["name"] = name
                rows.append(r)
                g = r["grads_to_half"]
                print(
                    f"| {target_name} | {beta:g} | {name} | {steps} | "
                    f"{fmt_fractions(r['fractions'])} | "
                    f"{r['grads_per_step']:.2f} | {'> budget' if g is None else f'{g:.0f}'} |",
                    flush=True,
                )
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
