"""``ladder-mcmc posterior NAME``: sample a posteriordb posterior with the defaults.

Runs ``lahmc(target)`` with ``sample``'s default warm-up, prints the summary under the
model's own parameter names (constrained), then each parameter's mean against
posteriordb's reference: ``z = (mean − reference) / √(MCSE² + reference MCSE²)``, and the
verdict of the benchmark suite's failure rules (:mod:`ladder_mcmc.bench.verdict`: R̂ above
1.01, a frozen chain, a warm-up's warning, non-finite draws, ``|z| > 5``), which the
command's exit code follows.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from ladder_mcmc.bench.figures import Figures, frozen_chains
from ladder_mcmc.bench.runs import warmup_problems
from ladder_mcmc.bench.verdict import Verdict, judge
from ladder_mcmc.diagnostics.ess import rank_rhat
from ladder_mcmc.diagnostics.summary import summary
from ladder_mcmc.hamiltonian.samplers import lahmc
from ladder_mcmc.models import posteriors
from ladder_mcmc.models.posteriors.comparison import compare
from ladder_mcmc.run.sampling import sample

HELP = "Sample a posteriordb posterior with the defaults; compare with its reference."


def add_arguments(p: argparse.ArgumentParser, integer) -> None:
    """The subcommand's arguments (``integer(minimum)`` is the CLI's integer type)."""
    p.add_argument(
        "name",
        choices=posteriors.names(),
        metavar="NAME",
        help="one of: " + ", ".join(posteriors.names()),
    )
    p.add_argument("--chains", type=integer(2), default=4, help="chains, >= 2 (4)")
    p.add_argument("--steps", type=integer(4), default=2000, help="sampling steps, >= 4 (2000)")
    p.add_argument("--warmup", type=integer(0), help="warm-up steps (sample's default, 1000)")
    p.add_argument("--seed", type=integer(0), default=0, help="seed, >= 0 (0)")


def run(args: argparse.Namespace) -> dict:
    """Sample, print the summary and the comparison; the result as a JSON-ready dict."""
    target = posteriors.load(args.name)
    rng = np.random.default_rng(args.seed)
    kernel = lahmc(target)
    init = target.initial_points(args.chains, rng)
    start = time.perf_counter()
    trace = sample(
        kernel,
        init,
        args.steps,
        seed=args.seed,
        warmup=args.warmup,
        progress=not args.quiet,
    )
    elapsed = time.perf_counter() - start
    print(summary(trace))
    comparison = compare(target, trace.positions)
    print(f"\nagainst posteriordb's reference ({args.name}):")
    print(f"{'parameter':<12} {'mean':>10} {'reference':>10} {'z':>7}")
    ref = target.reference.mean
    for name, mean, r, z in zip(comparison.names, comparison.mean, ref, comparison.z, strict=True):
        print(f"{name:<12} {mean:>10.4g} {r:>10.4g} {z:>7.2f}")
    verdict = _verdict(kernel, init, trace, comparison)
    print(f"max |z| = {comparison.max_abs_z:.2f}")
    if verdict.passed:
        print("passed: R-hat ≤ 1.01, every chain moved, |z| ≤ 5")
    else:
        print("FAILED: " + "; ".join(verdict.reasons))
    return {
        "posterior": args.name,
        "chains": args.chains,
        "steps": args.steps,
        "seed": args.seed,
        "seconds": round(elapsed, 2),
        "parameters": {
            name: {"mean": float(m), "reference": float(r), "z": float(z)}
            for name, m, r, z in zip(
                comparison.names, comparison.mean, ref, comparison.z, strict=True
            )
        },
        "max_abs_z": comparison.max_abs_z,
        "passed": verdict.passed,
        "failures": list(verdict.reasons),
    }


def _verdict(kernel, init, trace, comparison) -> Verdict:
    """The suite's failure rules on this run (:func:`ladder_mcmc.bench.verdict.judge`)."""
    positions = np.asarray(trace.positions, dtype=float)
    finite = np.isfinite(positions)
    with np.errstate(all="ignore"):
        rhat = rank_rhat(positions) if finite.all() else np.full(1, np.nan)
    worst = int(np.nanargmax(np.abs(comparison.z))) if np.isfinite(comparison.z).any() else None
    figures = Figures(
        max_rhat=float(np.max(rhat)),
        max_abs_z=comparison.max_abs_z,
        worst="" if worst is None else comparison.names[worst],
        frozen_chains=frozen_chains(positions),
        non_finite_draws=int(finite.size - np.count_nonzero(finite)),
    )
    n_warmup = 0 if trace.warmup is None else int(trace.warmup.n_steps)
    return judge(figures, warmup_warnings=warmup_problems(kernel, init, n_warmup, trace.warmup))
