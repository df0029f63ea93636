"""Adapted LAHMC and HMC on the seven posteriordb posteriors, against the reference runs.

For every posterior in :mod:`ladder_mcmc.models.posteriors` and for LAHMC (look-ahead ``K``)
and HMC (``K = 1``) with the same leapfrog length ``M`` and momentum refresh ``β``,
this script starts ``chains`` chains at points uniform on ``(-r, r)`` per unconstrained
coordinate (``r = 0.5`` by default, Stan's ``init=0.5``; Stan's default ``r = 2`` puts
about half the arma chains at ``|theta| > 1``, where the moving-average recursion
explodes (energies ~1e120) and, as warm-up adapts one step size for all chains, the
stuck chain drags the others' step size down with it), tunes the step size and a diagonal
inverse mass matrix, draws ``draws`` steps per chain, and reports

* ``max|z|``: the largest over parameters of ``|mean - ref_mean| / sqrt(MCSE² + MCSE_ref²)``
  (constrained scale; our MCSE = sd / sqrt(ESS)), and the parameter it belongs to;
* ``min ESS``, and min ESS per 1000 gradient evaluations (all chains), for the
  sampling phase alone and with the warm-up's gradient evaluations counted;
* the adapted ``ε`` and ``M``, the fraction of momentum flips ``F``, and the wall time
  (warm-up + sampling).

Tuning: ``sample(..., warmup=W)`` (dual averaging of the first-rung probability
towards 0.8, windowed diagonal mass matrix, as in Stan) when ``sample`` accepts
``warmup``; otherwise (or with ``--tuning pilot``) a crude pilot: bisection of
``ε`` on the first-rung acceptance of short HMC runs, and a diagonal inverse mass
from the pilot's variances; both cost gradient evaluations that are counted as
warm-up. The output says which was used.

Run::

    nice -n 10 python benchmarks/posteriordb.py   # 4 chains x (1000 + 2000): ~6 min
    nice -n 10 python benchmarks/posteriordb.py --beta 0.1 --json out.json
    python benchmarks/posteriordb.py --posteriors arK-arK --kernels lahmc --draws 200
    python benchmarks/posteriordb.py --tuning pilot --warmup 300 --draws 500
    nice -n 10 python benchmarks/posteriordb.py --trajectory-length 1.5707963

``--trajectory-length T`` sets ``M = round(T / ε)`` during warm-up instead of a fixed
``M`` (docs/how-to/posteriors.md: on arma a fixed ``M = 10`` is resonant at some adapted ``ε``).
"""

from __future__ import annotations

import argparse
import datetime
import inspect
import json
import sys
import time
from pathlib import Path

import numpy as np

try:
    import ladder_mcmc  # noqa: F401
except ImportError:  # run from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ladder_mcmc import Warmup, hmc, lahmc, sample
from ladder_mcmc.models import posteriors as pdb
from ladder_mcmc.models.posteriors.comparison import compare

TARGET_PROB = 0.8


def warmup_supported() -> bool:
    """True if ``sample`` adapts the step size and mass matrix itself (``warmup=``)."""
    return "warmup" in inspect.signature(sample).parameters


def make_kernel(kind: str, target, step_size: float | None, args, inverse_mass=None):
    """LAHMC (``look_ahead = args.look_ahead``) or HMC with the script's ``M`` and ``β``."""
    if kind == "lahmc":
        return lahmc(
            target,
            step_size,
            args.n_leapfrog,
            args.beta,
            look_ahead=args.look_ahead,
            inverse_mass=inverse_mass,
            jitter=args.jitter,
        )
    return hmc(
        target, step_size, args.n_leapfrog, args.beta, inverse_mass=inverse_mass, jitter=args.jitter
    )


def pilot_tune(target, init: np.ndarray, args, rng: np.random.Generator):
    """Crude fallback tuning: returns (ε, inverse mass, positions, gradient evaluations).

    Bisect ``log ε`` on the first-rung acceptance of short HMC runs (full momentum
    refresh, 25 steps per trial, 8 trials) towards 0.8; then, three times, estimate a
    diagonal inverse mass from a run of ``warmup / 6`` steps (second half, pooled over
    chains, shrunk towards ``10⁻³`` as Stan does) and bisect ``ε`` again for it.
    """
    x, eps, inv_mass, grads = np.asarray(init, dtype=float), 0.1, None, 0
    var_steps = max(20, args.warmup // 6)

    def bisect(eps, x, grads):
        lo = hi = None
        for _trial in range(8):
            kernel = hmc(target, eps, args.n_leapfrog, 1.0, inverse_mass=inv_mass)
            tr = sample(kernel, x, 25, rng, warmup=0)
            grads += int(tr.grad_evals.sum())
            x = tr.positions[-1]
            if np.mean(tr.rungs == 1) < TARGET_PROB:
                hi = eps
                eps = eps / 4 if lo is None else np.sqrt(lo * hi)
            else:
                lo = eps
                eps = eps * 4 if hi is None else np.sqrt(lo * hi)
        return eps, x, grads

    eps, x, grads = bisect(eps, x, grads)
    for _round in range(3):
        kernel = hmc(target, eps, args.n_leapfrog, 1.0, inverse_mass=inv_mass)
        tr = sample(kernel, x, var_steps, rng, warmup=0)
        grads += int(tr.grad_evals.sum())
        pos = tr.positions[var_steps // 2 :].reshape(-1, target.dim)
        x = tr.positions[-1]
        n = pos.shape[0]
        inv_mass = (n / (n + 5.0)) * pos.var(axis=0, ddof=1) + 1e-3 * (5.0 / (n + 5.0))
        eps, x, grads = bisect(eps, x, grads)
    return float(eps), inv_mass, x, grads


def initial_points(target, args, rng: np.random.Generator) -> np.ndarray:
    """Stan-style uniform inits, or uniform within ± 1 reference sd of the reference mean
    on the unconstrained scale (``--init reference``: starts in the typical set, which
    separates the sampler's accuracy from its ability to escape poor local modes)."""
    if args.init == "reference":
        un = target.reference.unconstrained
        mean = np.array([v["mean"] for v in un.values()])
        sd = np.array([v["sd"] for v in un.values()])
        return mean + sd * rng.uniform(-1, 1, size=(args.chains, target.dim))
    return target.initial_points(args.chains, rng, radius=args.init_radius)


def init_description(args) -> str:
    if args.init == "reference":
        return "uniform on reference unconstrained mean ± 1 sd"
    return f"uniform(-{args.init_radius}, {args.init_radius})"


def posterior_seed(seed: int, name: str) -> int:
    """The seed of a posterior's runs: both kernels start from the same points, and a
    posterior gets the same seed whichever others are run."""
    return seed + 1000 * pdb.names().index(name)


def run(name: str, kind: str, args, seed: int, tuning: str) -> dict:
    """Tune and run one kernel on one posterior; a row of the report."""
    target = pdb.load(name, args.path)
    rng = np.random.default_rng(seed)
    init = initial_points(target, args, rng)
    start = time.perf_counter()
    if tuning == "warmup":
        kernel = make_kernel(kind, target, None, args)  # ε left to warm-up
        trace = sample(
            kernel,
            init,
            args.draws,
            rng,
            warmup=Warmup(
                args.warmup, target_prob=TARGET_PROB, trajectory_length=args.trajectory_length
            ),
        )
        eps = trace.warmup.step_size
        n_leapfrog = int(trace.warmup.n_leapfrog)
        warm_grads = int(np.sum(trace.warmup.grad_evals))
    else:
        eps, inv_mass, x, warm_grads = pilot_tune(target, init, args, rng)
        n_leapfrog = args.n_leapfrog
        kernel = make_kernel(kind, target, eps, args, inverse_mass=inv_mass)
        trace = sample(kernel, x, args.draws, rng, warmup=0)
    wall = time.perf_counter() - start
    cmp = compare(target, trace.positions)
    grads = int(trace.grad_evals.sum())
    worst = int(np.argmax(np.abs(cmp.z)))
    return {
        "posterior": name,
        "kernel": kind,
        "max_abs_z": cmp.max_abs_z,
        "worst": cmp.names[worst],
        "max_sd_ratio_dev": float(np.max(np.abs(np.log(cmp.sd_ratio)))),
        "min_ess": cmp.min_ess,
        "max_rhat": cmp.max_rhat,
        "ess_per_1000": 1000 * cmp.min_ess / grads,
        "ess_per_1000_with_warmup": 1000 * cmp.min_ess / (grads + warm_grads),
        "step_size": float(eps),
        "n_leapfrog": n_leapfrog,
        "flip_fraction": trace.transition_fractions()["F"],
        "non_finite": trace.non_finite,
        "grad_evals": grads,
        "warmup_grad_evals": warm_grads,
        "wall_time": wall,
        "ess_method": cmp.ess_method,
        "names": list(cmp.names),
        "z": cmp.z.tolist(),
        "ess": cmp.ess.tolist(),
    }


HEADER = (
    f"{'posterior':<40} {'kernel':<6} {'max|z|':>6} {'(param)':<10} {'sd dev':>6} "
    f"{'Rhat':>5} {'minESS':>7} {'ESS/1kg':>8} {'(+warm)':>8} {'eps':>7} {'M':>3} {'F':>5} "
    f"{'wall s':>7}"
)


def format_row(r: dict) -> str:
    return (
        f"{r['posterior']:<40} {r['kernel']:<6} {r['max_abs_z']:6.2f} {r['worst']:<10} "
        f"{100 * r['max_sd_ratio_dev']:5.1f}% {r['max_rhat']:5.2f} {r['min_ess']:7.0f} "
        f"{r['ess_per_1000']:8.2f} "
        f"{r['ess_per_1000_with_warmup']:8.2f} {r['step_size']:7.3g} {r['n_leapfrog']:3d} "
        f"{r['flip_fraction']:5.3f} "
        f"{r['wall_time']:7.1f}"
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--warmup", type=int, default=1000)
    parser.add_argument("--draws", type=int, default=2000)
    parser.add_argument("--n-leapfrog", type=int, default=10, help="M, leapfrog steps per rung")
    parser.add_argument(
        "--trajectory-length",
        type=float,
        default=None,
        help="T: adapt M to round(T / eps) during warm-up (sample(trajectory_length=T); "
        "pi/2 = a quarter period in the adapted metric); default: keep --n-leapfrog",
    )
    parser.add_argument("--beta", type=float, default=1.0, help="momentum refresh β")
    parser.add_argument("--look-ahead", type=int, default=4, help="K for LAHMC")
    parser.add_argument(
        "--jitter",
        type=float,
        default=0.0,
        help="step size drawn per chain and step uniformly on eps·[1-j, 1+j] (0: fixed)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--init-radius", type=float, default=0.5, help="inits uniform on (-r, r) (Stan: 2)"
    )
    parser.add_argument(
        "--init",
        choices=["uniform", "reference"],
        default="uniform",
        help="uniform: Stan-style inits on (-r, r); reference: reference unconstrained "
        "mean ± sd (uniform), i.e. in the typical set",
    )
    parser.add_argument("--posteriors", nargs="*", default=None, help="names (default: all)")
    parser.add_argument("--kernels", default="lahmc,hmc")
    parser.add_argument("--tuning", choices=["auto", "warmup", "pilot"], default="auto")
    parser.add_argument("--path", default=None, help="posteriordb_refs.json (default: found)")
    parser.add_argument("--json", default=None, help="also write the rows to this JSON file")
    return parser


def resolve_tuning(requested: str, trajectory_length: float | None = None) -> str:
    """``"warmup"`` or ``"pilot"``; ``"auto"`` picks warm-up when ``sample`` supports it."""
    if requested == "auto":
        requested = "warmup" if warmup_supported() else "pilot"
    if requested == "pilot" and trajectory_length is not None:
        raise ValueError("--trajectory-length needs warm-up tuning (sample(..., warmup=W))")
    if requested == "warmup" and not warmup_supported():
        raise ValueError("this version of sample() has no warmup= argument; use --tuning pilot")
    return requested


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        tuning = resolve_tuning(args.tuning, args.trajectory_length)
    except ValueError as err:
        parser.error(str(err))
    names = args.posteriors or list(pdb.names())
    kinds = args.kernels.split(",")
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    how = (
        f"sample(..., warmup={args.warmup}) (dual averaging, target first-rung prob "
        f"{TARGET_PROB}, windowed diagonal mass matrix)"
        if tuning == "warmup"
        else "pilot fallback (bisection of eps on first-rung acceptance 0.8, diagonal "
        "inverse mass from pilot variances)"
    )
    print(f"# posteriordb benchmark, {when}")
    print(
        f"# {args.chains} chains x ({args.warmup} warm-up + {args.draws} draws); "
        + (
            f"M={args.n_leapfrog}"
            if args.trajectory_length is None
            else f"M=round(T/eps), T={args.trajectory_length:.4g}"
        )
        + f", beta={args.beta}, LAHMC K={args.look_ahead}"
        + (f", step jitter {args.jitter}" if args.jitter else "")
        + f"; seed={args.seed}; "
        f"inits: {init_description(args)}"
    )
    print(f"# tuning: {how}")
    print(HEADER)
    rows = []
    for name in names:
        for kind in kinds:
            row = run(name, kind, args, posterior_seed(args.seed, name), tuning)
            rows.append(row)
            print(format_row(row), flush=True)
    print(
        f"# ESS: {rows[0]['ess_method']}; sd dev = max over params of |log(sd/ref_sd)|; "
        "Rhat = max split R-hat"
    )
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
