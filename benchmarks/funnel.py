"""Multiscale targets at equal gradient budgets: this package's kernels against NUTS.

Targets: Neal's funnel (``NealsFunnel(10)``: ``v ~ N(0, 3²)``, nine ``x_i | v ~ N(0,
e^v)``), the paper's rough well (``RoughWell()``, 2-d) and eight schools centred
(``EightSchoolsCentered.load()``, 10 parameters, a funnel in ``(theta, log tau)``). Two
rough wells no setting was chosen on run when named in ``--targets``:

* ``rough_well_10d``: ``RoughWell(dim=10)``, with 4× ``--budget`` (NUTS's warm-up alone
  spends about 1.3·10⁶ gradients there);
* ``rough_well_dense``: ``RoughWell(sigma2=1)``, ripples twice as dense in the same
  bowl (a well with the same ``σ₁/σ₂`` would be the paper's in other units).

Samplers, each with its defaults, nothing searched on these targets here:

* ``lahmc()``: ``sample(lahmc(target), ...)``, everything adapted in warm-up;
* ``lifted_lahmc()``: ``lifted_lahmc(target)`` (``ε`` and the mass adapted; ``M = 30``,
  ``δ = 0.06``, ``a = 1.25``: chosen on the rough well, ``docs/how-to/rough-targets.md``);
* ``lifted, p=0.7``: the same with ``sample(..., target_prob=0.7)``, the setting
  ``docs/how-to/rough-targets.md`` documents for rough targets (found by searching on
  the paper's rough well in ``benchmarks/against_nuts.py``): run on the rough wells
  only, the targets the docs give a setting for;
* ``lifted, M=15`` / ``M=60`` / ``δ=0.03`` / ``δ=0.12``: ``lifted_lahmc`` with one of its
  fixed settings halved or doubled, on the rough well only: how much its defaults owe
  to having been chosen there;
* ``refined``: :func:`~ladder_mcmc.hamiltonian.refined_step.refined_lahmc` (``ε = 0.4``,
  ``M = 6``, ``δ = 0.5``, ``ℓ_max = 4``: from the funnel's scales, as in
  ``benchmarks/multiscale_instances.py``), on the funnel only. Warm-up cannot adapt it, so
  its 1000 warm-up steps are a burn-in: run, counted, dropped;
* ``exact draws``: 4000 independent exact draws (funnel, rough well): the errors an
  independent sample of that size makes (the funnel's ``Var x_i`` is dominated by rare
  draws of ``v`` near 9, so even these are far off);
* ``NUTS``: NumPyro's defaults (target acceptance 0.8, diagonal mass, 1000 warm-up
  steps), float64, ``chain_method="vectorized"``, on JAX copies of the energies
  (``benchmarks/nuts_peers.py``, checked at start to equal the package's).

Budget: every run of 4 chains spends about ``--budget`` gradient evaluations in all,
warm-up included (1000 warm-up steps, each sampler's default). After the warm-up the
chains go on in chunks from their last state (``apply_warmup`` / NumPyro's
``post_warmup_state``): a tenth of what the cost per step so far leaves room for, then
most of the rest, then a little more than the rest (``nuts_peers.draws_for``), and the
draws are cut at the last step within the budget, as if the chains stopped there
(``nuts_peers.within_budget``; a warm-up that spends more keeps one draw). The
gradients actually used are reported. The package's targets are wrapped in a
:class:`~ladder_mcmc.diagnostics.GradientCounter`: the run log gives its count over the
traces' recorded gradients (``counted/recorded``; the gradient check and the first
evaluation at the initial points make it slightly above 1). Chains start uniform on
(−2, 2) per unconstrained coordinate from ``default_rng(seed)``, the same points for
every sampler.

Per target and sampler, median [min–max] over seeds: for each parameter the normalised
error of the mean, ``|mean − true| / true sd``, and of the variance, ``|var − true var|
/ true var``, as the max and the RMS over parameters (all draws of all chains pooled);
and, for the funnels, the two errors of the scale coordinate alone (``v``; eight
schools' ``tau``); true values exact for the funnel (``E = 0``, ``Var v = 9``,
``Var x_i = e^{4.5}``) and the rough well (mean 0, variance by quadrature: ``σ₁²`` to rounding,
the ripples average out), for eight schools the posteriordb reference of the non-centred
model (the same posterior over ``theta, mu, tau``; constrained scale; its own error
against the exact quadrature ``exact_moments`` is printed, the floor of these figures).
Then NUTS's divergent transitions or the package's all-flip steps, and non-finite rungs
(sampling phase); ESS per 1000 gradients (min over coordinates of the bulk ESS of x and
x², unconstrained scale; per sampling gradient and per gradient of the whole run); max
rank-normalised split R̂; the fraction of draws in each funnel's neck, ``v < −5`` for
Neal's (exact ``Φ(−5/3) = 0.0478``) and ``log tau < −2`` for eight schools (exact
0.0275, by quadrature: ``log_tau_posterior``); wall seconds (NUTS without compile time;
timings depend on the machine's load).

Run::

    nice -n 10 python benchmarks/funnel.py --budget 1e6 --out funnel.md   # ~9 min
    nice -n 10 python benchmarks/funnel.py --budget 1e6 --targets funnel rough_well \\
        eight_schools_c rough_well_10d rough_well_dense --out funnel.md   # ~20 min
    nice -n 10 python benchmarks/funnel.py            # budget 2e5 per run, 5 seeds
    nice -n 10 python benchmarks/funnel.py --quick    # smoke run: 1 seed, 1e5, 200 warm-up

``--out FILE`` puts the block (date, commit, machine, versions, tables, a line per run)
on top of FILE.
"""

from __future__ import annotations

import argparse
import datetime
import sys
import time
import warnings
from functools import partial
from pathlib import Path

import numpy as np
from scipy.stats import norm

HERE = Path(__file__).resolve().parent
try:
    import ladder_mcmc  # noqa: F401
except ImportError:  # run from a checkout without installing
    sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))
import nuts_peers  # noqa: E402
from machine import machine_facts  # noqa: E402
from models import commit  # noqa: E402  (benchmarks/models.py)

from ladder_mcmc import apply_warmup, lahmc, lifted_lahmc, sample  # noqa: E402
from ladder_mcmc.diagnostics import GradientCounter, min_bulk_ess, rank_rhat  # noqa: E402
from ladder_mcmc.hamiltonian.refined_step import refined_lahmc  # noqa: E402
from ladder_mcmc.models import NealsFunnel, RoughWell  # noqa: E402
from ladder_mcmc.models.posteriors import EightSchoolsCentered  # noqa: E402
from ladder_mcmc.models.posteriors.eight_schools import (  # noqa: E402
    exact_moments,
    log_tau_posterior,
)

TARGETS = {
    "funnel": lambda: NealsFunnel(10),
    "rough_well": lambda: RoughWell(),
    "eight_schools_c": EightSchoolsCentered.load,
    # rough wells that no setting was chosen on (not run unless named in --targets)
    "rough_well_10d": lambda: RoughWell(dim=10),
    "rough_well_dense": lambda: RoughWell(sigma2=1.0),
}
DEFAULT_TARGETS = ("funnel", "rough_well", "eight_schools_c")
#: budget multipliers: NUTS's warm-up alone spends about 1.3e6 gradients on the 10-d well
BUDGET_SCALE = {"rough_well_10d": 4.0}
ROUGH_WELLS = ("rough_well", "rough_well_10d", "rough_well_dense")
#: label -> (kernel maker, sample keywords, targets it runs on: None = all)
OURS = {
    "lahmc()": (lahmc, {}, None),
    "lifted_lahmc()": (lifted_lahmc, {}, None),
    "lifted, p=0.7": (lifted_lahmc, {"target_prob": 0.7}, ROUGH_WELLS),
    # the sensitivity of lifted_lahmc's fixed settings, on the well they were chosen on
    "lifted, M=15": (partial(lifted_lahmc, n_leapfrog=15), {}, ("rough_well",)),
    "lifted, M=60": (partial(lifted_lahmc, n_leapfrog=60), {}, ("rough_well",)),
    "lifted, δ=0.03": (partial(lifted_lahmc, delta=0.03), {}, ("rough_well",)),
    "lifted, δ=0.12": (partial(lifted_lahmc, delta=0.12), {}, ("rough_well",)),
    # not adapted: settings from the funnel's scales (module docstring), warm-up = burn-in
    "refined": (
        partial(refined_lahmc, step_size=0.4, n_steps=6, threshold=0.5, max_level=4),
        {},
        ("funnel",),
    ),
}
#: kernels warm-up cannot adapt: their warm-up steps are burn-in (run, counted, dropped)
NOT_ADAPTED = ("refined",)
NUTS = "NUTS"
EXACT = "exact draws"  # independent draws: the error a sample of EXACT_N makes
EXACT_N = 4000
#: a funnel's neck: (coordinate, threshold) of the unconstrained draws below it
NECK = {"funnel": (0, -5.0), "eight_schools_c": (9, -2.0)}
NECK_NAME = {"funnel": "v < −5", "eight_schools_c": "log tau < −2"}


def neck_exact(key: str) -> float:
    """The exact fraction of the posterior in the neck: ``Φ(−5/3)`` for the funnel, by
    quadrature of ``p(log tau | y)`` for eight schools."""
    if key == "funnel":
        return float(norm.cdf(NECK[key][1] / 3.0))
    t = TARGETS[key]()
    u, w = log_tau_posterior(t.y, t.sigma)
    return float(w[u < NECK[key][1]].sum())


def rough_well_moments(target: RoughWell) -> tuple[np.ndarray, np.ndarray]:
    """Mean and variance of each coordinate, by quadrature (the density factorises):
    trapezoid rule on (−14 σ₁, 14 σ₁), 80 points per ripple half-period."""
    s1, s2 = target.sigma1, target.sigma2
    x = np.linspace(-14 * s1, 14 * s1, int(28 * s1 / s2 * 80) + 1)
    w = np.exp(-(x * x) / (2 * s1**2) - np.cos(np.pi * x / s2))
    w /= w.sum()
    mean = float(w @ x)
    var = float(w @ (x - mean) ** 2)
    return np.full(target.dim, mean), np.full(target.dim, var)


def truth(key: str, target) -> tuple[np.ndarray, np.ndarray]:
    """True means and variances of the parameters the errors are taken on."""
    if key == "funnel":
        return target.mean, target.variance
    if key in ROUGH_WELLS:
        return rough_well_moments(target)
    return target.reference.mean, target.reference.sd**2


def parameters_of(key: str, target, positions: np.ndarray) -> np.ndarray:
    return target.constrain(positions) if key == "eight_schools_c" else positions


def figures(key, target, positions, grads, warm_grads, true) -> dict:
    """Errors, ESS and R-hat of a run's draws (steps, chains, dim)."""
    values = parameters_of(key, target, positions).reshape(-1, positions.shape[-1])
    mean, var = values.mean(axis=0), values.var(axis=0)
    true_mean, true_var = true
    mean_err = np.abs(mean - true_mean) / np.sqrt(true_var)
    var_err = np.abs(var - true_var) / true_var
    ess = min_bulk_ess(positions)
    return {
        "grads_total": grads + warm_grads,
        "mean_max": float(mean_err.max()),
        "mean_rms": float(np.sqrt(np.mean(mean_err**2))),
        "var_max": float(var_err.max()),
        "var_rms": float(np.sqrt(np.mean(var_err**2))),
        "ess_per_1000": 1000.0 * ess / grads,
        "ess_per_1000_all": 1000.0 * ess / (grads + warm_grads),
        "rhat": float(np.max(rank_rhat(positions))),
        "tail": float(np.mean(positions[..., NECK[key][0]] < NECK[key][1]))
        if key in NECK
        else None,
        # the errors of the funnel's scale coordinate alone (v; eight schools' tau)
        "neck_mean": float(mean_err[NECK[key][0]]) if key in NECK else None,
        "neck_var": float(var_err[NECK[key][0]]) if key in NECK else None,
        "draws": positions.shape[0],
    }


def run_ours(key, label, seed, true, *, chains, budget, n_warmup) -> dict:
    """One budgeted run of a package kernel (module docstring). The target is wrapped in a
    :class:`GradientCounter`: its count (``counted``) checks the traces' bookkeeping."""
    make, sample_kw, _ = OURS[label]
    target = TARGETS[key]()
    counter = GradientCounter(target)
    init = np.random.default_rng(seed).uniform(-2.0, 2.0, size=(chains, target.dim))
    kernel = make(counter)
    with warnings.catch_warnings(record=True) as caught:  # counted, not shown
        warnings.simplefilter("always")
        start = time.perf_counter()
        if label in NOT_ADAPTED:  # burn-in: run, counted, dropped
            burn = sample(kernel, init, n_warmup, seed=seed + 10_000, warmup=0, **sample_kw)
            warm_grads = float(np.sum(burn.grad_evals))
            adapted, step_size = kernel, float(kernel.map.family.step_size)
            traces, last, first_rate = [], burn.final, warm_grads / n_warmup
        else:
            traces = [sample(kernel, init, 1, seed=seed + 10_000, warmup=n_warmup, **sample_kw)]
            warm = traces[0].warmup
            warm_grads = float(np.sum(warm.grad_evals))
            adapted, step_size = apply_warmup(kernel, warm), float(np.median(warm.step_size))
            last, first_rate = traces[0].final, None
        for chunk in range(nuts_peers.CHUNKS):
            done = float(sum(np.sum(t.grad_evals) for t in traces))
            steps = sum(t.n_steps for t in traces)
            n = nuts_peers.draws_for(
                budget - warm_grads - done, done / steps if steps else first_rate, chunk=chunk
            )
            if n == 0:
                break
            seq = np.random.SeedSequence([seed, 10_000, chunk])
            traces.append(sample(adapted, last, n, seed=seq, warmup=0, checks=False))
            last = traces[-1].final
        wall = time.perf_counter() - start
    recorded = warm_grads + float(sum(np.sum(t.grad_evals) for t in traces))
    per_step = np.concatenate([t.grad_evals_per_step.sum(axis=1) for t in traces])
    keep = nuts_peers.within_budget(per_step, budget - warm_grads)  # chains stopped there
    positions = np.concatenate([t.positions for t in traces], axis=0)[:keep]
    rungs = np.concatenate([t.rungs for t in traces], axis=0)[:keep]
    non_finite = np.concatenate([t.non_finite_rungs for t in traces], axis=0)[:keep]
    rec = figures(key, target, positions, float(per_step[:keep].sum()), warm_grads, true)
    rec.update(
        bad=int((rungs == 0).sum()),  # all-flip steps
        non_finite=int(non_finite.sum()),
        wall=wall,
        step_size=step_size,
        warnings=len(caught),
        counted=counter.rows / recorded,  # every gradient the target computed / recorded
    )
    return rec


def run_exact(key, seed, true, *, chains, **_) -> dict:
    """``EXACT_N`` independent exact draws (the target's ``sample``), as (n, chains, dim):
    the errors an independent sample of that size makes (no gradients)."""
    target = TARGETS[key]()
    x = target.sample(EXACT_N, np.random.default_rng([seed, 20_000]))
    positions = x.reshape(EXACT_N // chains, chains, target.dim)
    rec = figures(key, target, positions, 1.0, 0.0, true)
    for field in ("grads_total", "ess_per_1000", "ess_per_1000_all", "rhat"):
        rec[field] = None
    rec.update(bad=None, non_finite=None, wall=0.0, step_size=float("nan"))
    return rec


def run_nuts(key, seed, true, *, chains, budget, n_warmup) -> dict:
    target = TARGETS[key]()
    init = np.random.default_rng(seed).uniform(-2.0, 2.0, size=(chains, target.dim))
    res = nuts_peers.run_nuts_budget(
        nuts_peers.potential(target), init, seed, budget=budget, n_warmup=n_warmup
    )
    rec = figures(key, target, res["positions"], res["grads"], res["warmup_grads"], true)
    rec.update(
        bad=res["divergences"],
        non_finite=None,
        wall=res["wall"],
        step_size=res["step_size"],
        compile=res["compile"],
    )
    return rec


def run_line(rec: dict) -> str:
    """One run's figures, for the log."""

    def g(field, fmt=".3g"):
        return "–" if rec.get(field) is None else f"{rec[field]:{fmt}}"

    tail = "" if rec["tail"] is None else f", neck {rec['tail']:.4f}"
    if rec.get("neck_mean") is not None:
        tail += f" (v or tau: mean err {rec['neck_mean']:.2g}, var err {rec['neck_var']:.2g})"
    compiling = f" (+{rec['compile']:.1f} s compiling)" if "compile" in rec else ""
    if "counted" in rec:  # the counting target's gradients over the recorded ones
        compiling += f", counted/recorded {rec['counted']:.4f}"
    return (
        f"{g('grads_total')} grads, {rec['draws']} draws, mean err {g('mean_max', '.2g')}/"
        f"{g('mean_rms', '.2g')}, var err {g('var_max', '.2g')}/{g('var_rms', '.2g')}, "
        f"bad {g('bad', 'd')}, non-finite {g('non_finite', 'd')}, ESS/1kg "
        f"{g('ess_per_1000')} ({g('ess_per_1000_all')} all), R̂ {g('rhat', '.3f')}{tail}, "
        f"ε {g('step_size')}, wall {rec['wall']:.1f} s{compiling}"
    )


def med_range(rows: list[dict], field: str, fmt: str = ".3g") -> str:
    values = [r[field] for r in rows if r.get(field) is not None]
    if not values:
        return "–"
    v = np.asarray(values, dtype=float)
    return f"{np.median(v):{fmt}} [{v.min():{fmt}}–{v.max():{fmt}}]"


COLUMNS = [
    ("gradients used", "grads_total", ".3g"),
    ("mean err max", "mean_max", ".2g"),
    ("mean err RMS", "mean_rms", ".2g"),
    ("var err max", "var_max", ".2g"),
    ("var err RMS", "var_rms", ".2g"),
    ("divergences / flips", "bad", ".0f"),
    ("non-finite rungs", "non_finite", ".0f"),
    ("ESS/1000 grads (sampling)", "ess_per_1000", ".3g"),
    ("(all)", "ess_per_1000_all", ".3g"),
    ("max R̂", "rhat", ".3f"),
    ("wall s", "wall", ".3g"),
]


def results_table(runs: dict) -> list[str]:
    """Markdown, a row per target and sampler."""
    cols = list(COLUMNS)
    if any(key in NECK for key, _ in runs):
        cols[5:5] = [("v or tau: mean err", "neck_mean", ".2g"), ("var err", "neck_var", ".2g")]
        cols.insert(-1, ("draws in the neck", "tail", ".3g"))
    lines = [
        "| target | sampler | " + " | ".join(c[0] for c in cols) + " |",
        "|---|---|" + "---|" * len(cols),
    ]
    for (key, label), rows in runs.items():
        cells = [med_range(rows, field, fmt) for _, field, fmt in cols]
        lines.append(f"| {key} | {label} | " + " | ".join(cells) + " |")
    return lines


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="smoke run: 1 seed, budget 1e5")
    ap.add_argument("--budget", type=float, default=None, help="gradients per run (2e5)")
    ap.add_argument("--seeds", type=int, default=None, help="seeds 0 .. N-1 (5; quick 1)")
    ap.add_argument("--warmup", type=int, default=None, help="warm-up steps (1000; quick 200)")
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument(
        "--targets",
        nargs="+",
        choices=list(TARGETS),
        default=list(DEFAULT_TARGETS),
        help="targets to run (the default three; the held-out rough wells only if named)",
    )
    ap.add_argument("--samplers", nargs="+", default=None, help="labels to run (all)")
    ap.add_argument("--no-nuts", action="store_true", help="the package's kernels only")
    ap.add_argument("--out", type=Path, default=None, help="put the Markdown block on top")
    return ap


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    budget = args.budget or (1e5 if args.quick else 2e5)
    n_seeds = args.seeds or (1 if args.quick else 5)
    n_warmup = args.warmup or (200 if args.quick else 1000)
    common = {"chains": args.chains, "budget": budget, "n_warmup": n_warmup}
    peer = None if args.no_nuts else nuts_peers.versions()
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    command = "python benchmarks/funnel.py " + " ".join(argv if argv is not None else sys.argv[1:])
    head = [
        f"## {when}: multiscale targets at equal gradient budgets (`benchmarks/funnel.py`)",
        "",
        f"At commit {commit()}. {peer or 'NUTS not run'}. {args.chains} chains, about "
        f"{budget:.3g} gradients per run (warm-up of {n_warmup} steps included), seeds "
        f"0–{n_seeds - 1}; median [min–max] over seeds.",
        "",
        "```",
        command.strip(),
        *machine_facts(),
        "```",
    ]
    truths = {key: truth(key, TARGETS[key]()) for key in args.targets}
    necks = [f"{k}: {NECK_NAME[k]}, exact {neck_exact(k):.4f}" for k in args.targets if k in NECK]
    notes = ["Fraction of draws in the neck: " + "; ".join(necks) + "."] if necks else []
    if "eight_schools_c" in args.targets:
        t = TARGETS["eight_schools_c"]()
        mean, var = exact_moments(t.y, t.sigma)
        ref_mean, ref_var = truths["eight_schools_c"]
        notes.append(
            "Eight schools' reference (posteriordb, non-centred, ~10⁴ ESS) against the exact "
            f"quadrature: mean err max {np.max(np.abs(ref_mean - mean) / np.sqrt(var)):.2g}, "
            f"var err max {np.max(np.abs(ref_var - var) / var):.2g} (the floor of its rows)."
        )
    if peer:
        worst = max(nuts_peers.check_potentials({k: TARGETS[k]() for k in args.targets}).values())
        notes.append(f"JAX potentials = package energies to {worst:.1e} (relative).")
    print("\n".join(head + [""] + notes), flush=True)
    sample(lahmc(RoughWell()), np.zeros((2, 2)), 20, seed=0, warmup=30, checks=False)  # load
    runs: dict[tuple[str, str], list[dict]] = {}
    log: list[str] = []
    start = time.perf_counter()
    for key in args.targets:
        labels = [lb for lb, (_, _, only) in OURS.items() if only is None or key in only]
        if args.samplers:
            labels = [lb for lb in labels if lb in args.samplers]
        exact = [EXACT] if hasattr(TARGETS[key](), "sample") else []
        peers = [lb for lb in [NUTS, *exact] if not args.samplers or lb in args.samplers]
        for label in labels + [lb for lb in peers if lb != NUTS or peer]:
            for seed in range(n_seeds):
                run = {NUTS: run_nuts, EXACT: run_exact}.get(label)
                scaled = {**common, "budget": common["budget"] * BUDGET_SCALE.get(key, 1.0)}
                if run is None:
                    rec = run_ours(key, label, seed, truths[key], **scaled)
                else:
                    rec = run(key, seed, truths[key], **scaled)
                runs.setdefault((key, label), []).append(rec)
                log.append(f"{key:<15} {label:<15} seed {seed}: " + run_line(rec))
                print(log[-1], flush=True)
    body = ["", "### Results", "", *results_table(runs)]
    body += ["", f"{time.perf_counter() - start:.0f} s in runs."]
    print("\n".join(body))
    if args.out:
        runs_block = ["", "Every run:", "", "```text", *log, "```"]
        old = args.out.read_text() if args.out.exists() else ""  # newest block on top
        text = "\n".join(head + [""] + notes + body + runs_block) + "\n"
        args.out.write_text(text + ("\n" + old if old else ""))
        print(f"# written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
