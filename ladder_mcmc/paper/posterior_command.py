"""``ladder-mcmc posterior NAME``: sample a posteriordb posterior with the defaults.

Runs ``lahmc(target)`` with ``sample``'s default warm-up, prints the summary under the
model's own parameter names (constrained), then each parameter's mean against
posteriordb's reference: ``z = (mean − reference) / √(MCSE² + reference MCSE²)``, its sd
against the reference's (the suite's z of the sd, :mod:`ladder_mcmc.bench.figures`), and
the verdict of the benchmark suite's failure rules (:mod:`ladder_mcmc.bench.verdict`: R̂
above 1.01, a frozen chain, a warm-up's warning, non-finite draws, ``|z| > 5`` of a mean
or an sd), which the command's exit code follows. A run cut short by Ctrl-C is not
judged: the command says so and exits with 130 (its draws are not kept).
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from ladder_mcmc.bench.figures import Figures, frozen_chains, z_of_sds
from ladder_mcmc.bench.moments import Moments
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
    if trace.interrupted:
        return _interrupted(args, trace)
    print(summary(trace))
    comparison = compare(target, trace.positions)
    print(f"\nagainst posteriordb's reference ({args.name}):")
    print(
        f"{'parameter':<12} {'mean':>10} {'reference':>10} {'z':>7} {'sd':>10} "
        f"{'reference':>10} {'z of sd':>7}"
    )
    ref = target.reference
    z_sd = _z_of_sds(target, trace.positions)
    rows = zip(comparison.names, comparison.mean, ref.mean, comparison.z, strict=True)
    for (name, mean, r, z), sd, r_sd, zs in zip(rows, comparison.sd, ref.sd, z_sd, strict=True):
        print(f"{name:<12} {mean:>10.4g} {r:>10.4g} {z:>7.2f} {sd:>10.4g} {r_sd:>10.4g} {zs:>7.2f}")
    verdict = _verdict(kernel, init, trace, comparison, z_sd)
    print(f"max |z| = {comparison.max_abs_z:.2f}, of the sds {_largest(z_sd):.2f}")
    if verdict.passed:
        print("passed: R-hat ≤ 1.01, every chain moved, |z| ≤ 5 (means and sds)")
    else:
        print("FAILED: " + "; ".join(verdict.reasons))
    return {
        "posterior": args.name,
        "chains": args.chains,
        "steps": args.steps,
        "seed": args.seed,
        "seconds": round(elapsed, 2),
        "parameters": {
            name: {
                "mean": float(m),
                "reference": float(r),
                "z": float(z),
                "sd": float(sd),
                "reference_sd": float(r_sd),
                "z_sd": float(zs),
            }
            for name, m, r, z, sd, r_sd, zs in zip(
                comparison.names,
                comparison.mean,
                ref.mean,
                comparison.z,
                comparison.sd,
                ref.sd,
                z_sd,
                strict=True,
            )
        },
        "max_abs_z": comparison.max_abs_z,
        "max_abs_z_sd": _largest(z_sd),
        "passed": verdict.passed,
        "failures": list(verdict.reasons),
    }


def _interrupted(args: argparse.Namespace, trace) -> dict:
    """Say that Ctrl-C cut the run short, and where; nothing is judged."""
    steps = int(np.shape(trace.positions)[0])
    where = "during warm-up" if trace.warmup is None else f"after {steps} of {args.steps} steps"
    print(
        f"posterior: interrupted (Ctrl-C) {where}; not judged, draws not kept",
        file=sys.stderr,
    )
    return {"posterior": args.name, "interrupted": True, "steps_done": steps, "passed": False}


def _largest(values: np.ndarray) -> float:
    values = np.abs(np.asarray(values, dtype=float))
    return float(np.max(values)) if values.size and not np.isnan(values).any() else float("nan")


def _z_of_sds(target, positions) -> np.ndarray:
    """Each parameter's z of its sd against the reference's (NaN where it cannot be had)."""
    theta = target.constrain(np.asarray(positions, dtype=float))
    with np.errstate(all="ignore"):
        return z_of_sds(theta, Moments.from_reference(target.reference))


def _verdict(kernel, init, trace, comparison, z_sd) -> Verdict:
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
        max_abs_z_sd=_largest(z_sd),
        worst_sd="" if np.isnan(z_sd).all() else comparison.names[int(np.nanargmax(z_sd))],
        frozen_chains=frozen_chains(positions),
        non_finite_draws=int(finite.size - np.count_nonzero(finite)),
    )
    n_warmup = 0 if trace.warmup is None else int(trace.warmup.n_steps)
    return judge(figures, warmup_warnings=warmup_problems(kernel, init, n_warmup, trace.warmup))
