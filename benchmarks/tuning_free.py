"""LAHMC with default settings only, against NUTS (NumPyro), side by side in one run.

Protocol: 4 chains, 1000 warm-up + 2000 draws per chain, seeds 0–4, median [min–max]
over seeds. Chains start uniformly on (−2, 2) per coordinate (the seed's
``default_rng(seed)``; the package's ``sample`` gets ``seed + 10000``); posteriordb
posteriors start as ``benchmarks/posteriordb.py`` starts them: uniform on (−0.5, 0.5)
from ``default_rng(posterior_seed(seed, name))``, that generator also seeding ``sample``.
NUTS starts from the same points. Targets: ``IllConditionedGaussian(2)`` and ``(100)``,
``RoughWell()`` and the seven posteriordb posteriors of ``ladder_mcmc.models.posteriors``.

The package side is ``sample(lahmc(target), init, 2000, seed=s, warmup=1000)``: every
kernel setting left to warm-up. Until ``lahmc`` accepts the target alone, a shim runs
``lahmc(t, step_size=0.5, n_leapfrog=10, beta=0.1)`` instead and every line says
**OLD API** (harness smoke output, not a result of the defaults).

Per target and seed: min over coordinates of min(bulk ESS of x_i, of x_i²)
(``ladder_mcmc.diagnostics.min_bulk_ess``, unconstrained scale) per 1000 gradient
evaluations of all chains, sampling phase and with the warm-up's gradients counted; ESS
per second of warm-up + sampling (the wall time of the ``sample`` call; for NUTS with
compile time subtracted, see ``benchmarks/nuts_peers.py``); max rank-normalised split
R-hat (``ladder_mcmc.diagnostics.rank_rhat``); for posteriordb posteriors max |z| against
the shipped references (``ladder_mcmc.models.posteriors.comparison.compare``, as
``benchmarks/posteriordb.py``), passing at ≤ 5; the adapted ε, M, εM, β and K ("–" where
the trace does not say). Then a summary per target with the aims as columns: sampling
phase ≥ 1.5× NUTS on the two Gaussians and eight schools, ≥ 1× on the rough well; with
warm-up ≥ 1× NUTS and R-hat ≤ 1.01 (all seeds); ESS/s with warm-up ≥ NUTS's.

NUTS (NumPyro defaults: target acceptance 0.8, diagonal mass, float64) runs on JAX
copies of the two Gaussians, the rough well and eight schools non-centred (checked at
start to equal the package energies), with ``chain_method`` vectorized and sequential
(the same draws up to rounding; the summary takes the better median of the two for each
figure, as the quoted numbers take the better of NumPyro and BlackJAX). Gradients =
``num_steps``. Measured with NumPyro 0.22.0, JAX 0.10.2 (jaxlib 0.10.2), installed by
``pip install -e ".[peers]"``; without them the NUTS columns fall back to the numbers
quoted in the issue (:data:`QUOTED_NUTS`), and the script says so. Full run ~9 min, NUTS
side ~2.5 min (of it ~1 min compiling), ``--quick`` < 1 min (2 cores, shared).

Run::

    nice -n 10 python benchmarks/tuning_free.py                    # everything, 5 seeds
    nice -n 10 python benchmarks/tuning_free.py --quick            # smoke run, 2 seeds
    nice -n 10 python benchmarks/tuning_free.py --targets gauss2 gauss100 rough_well \\
        eight_schools --json out.json
    nice -n 10 python benchmarks/tuning_free.py --no-nuts --ablation
"""

from __future__ import annotations

import argparse
import datetime
import inspect
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
try:
    import ladder_mcmc  # noqa: F401
except ImportError:  # run from a checkout without installing
    sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))
import nuts_peers  # noqa: E402
from posteriordb import posterior_seed  # noqa: E402  (benchmarks/posteriordb.py)

from ladder_mcmc import lahmc, lifted_lahmc, sample  # noqa: E402
from ladder_mcmc.diagnostics import min_bulk_ess, rank_rhat  # noqa: E402
from ladder_mcmc.models import IllConditionedGaussian, RoughWell  # noqa: E402
from ladder_mcmc.models import posteriors as pdb  # noqa: E402
from ladder_mcmc.models.posteriors.comparison import compare  # noqa: E402

#: NUTS, quoted from the issue (NumPyro / BlackJAX, the better of the two, this machine
#: class): ESS per 1000 gradients (sampling, with warm-up) and ESS/s with warm-up.
QUOTED_NUTS = {
    "gauss2": (146.0, 21.0, 2800.0),
    "gauss100": (48.0, 6.2, 452.0),
    "rough_well": (0.435, 0.28, 37.0),
    "eight_schools": (59.5, 37.5, 3450.0),
}
POSTERIORS = {name.split("-")[0]: name for name in pdb.names()}
SYNTHETIC = {
    "gauss2": lambda: IllConditionedGaussian(2),
    "gauss100": lambda: IllConditionedGaussian(100),
    "rough_well": lambda: RoughWell(),
}
TARGETS = [*SYNTHETIC, *POSTERIORS]
QUICK_TARGETS = ["gauss2", "gauss100", "rough_well", "eight_schools", "kidiq"]
#: the sampling-phase aim: ours ≥ AIMS × NUTS
AIMS = {"gauss2": 1.5, "gauss100": 1.5, "eight_schools": 1.5, "rough_well": 1.0}
RHAT_MAX, Z_MAX = 1.01, 5.0
OLD_API_SETTINGS = {"step_size": 0.5, "n_leapfrog": 10, "beta": 0.1}
#: --ablation: one adapted quantity switched back to a fixed value each
#: (label, lahmc keywords, sample keywords); look_ahead 4 is the default.
ABLATIONS = [
    ("M=10", {"n_leapfrog": 10}, {}),
    ("β=1", {"beta": 1.0}, {}),
    ("no jitter", {"length_jitter": 0}, {}),
    ("K=1", {"look_ahead": 1}, {}),
    ("K=2", {"look_ahead": 2}, {}),
    ("K=8", {"look_ahead": 8}, {}),
    ("fixed mass", {}, {"adapt_mass": False}),
    ("p=0.8", {}, {"target_prob": 0.8}),
    ("p=0.9", {}, {"target_prob": 0.9}),
    ("p=0.95", {}, {"target_prob": 0.95}),
]


#: other kernels the docs recommend for a target, also with defaults only (printed with
#: the ablation rows: the ratio is to ``lahmc(target)``)
ALTERNATIVES = {"rough_well": [("lifted_lahmc()", lifted_lahmc)]}


def new_api() -> bool:
    """True when ``lahmc`` can be called with the target alone (step size, ``M`` and ``β``
    optional, adapted in warm-up)."""
    params = inspect.signature(lahmc).parameters
    return all(
        n in params and params[n].default is not inspect.Parameter.empty
        for n in ("step_size", "n_leapfrog", "beta")
    )


NEW_API = new_api()
SIDE = "lahmc()" if NEW_API else "lahmc OLD API"


def make_target(key: str):
    return SYNTHETIC[key]() if key in SYNTHETIC else pdb.load(POSTERIORS[key])


def initial(key: str, target, seed: int, chains: int):
    """``(init (chains, dim), seed for sample)`` of a target and seed (module docstring)."""
    if key in POSTERIORS:
        rng = np.random.default_rng(posterior_seed(seed, POSTERIORS[key]))
        return target.initial_points(chains, rng, radius=0.5), rng
    return np.random.default_rng(seed).uniform(-2.0, 2.0, size=(chains, target.dim)), seed + 10_000


def figures(key: str, target, positions, grads: float, warm_grads: float, wall: float) -> dict:
    """ESS per 1000 gradients (sampling; with warm-up), ESS/s, max R-hat, max |z|."""
    ess = min_bulk_ess(positions)
    rec = {
        "min_ess": ess,
        "per_1000": 1000.0 * ess / grads,
        "per_1000_warm": 1000.0 * ess / (grads + warm_grads),
        "ess_per_s": ess / wall,
        "rhat": float(np.max(rank_rhat(positions))),
        "grads": grads,
        "warmup_grads": warm_grads,
        "wall": wall,
        "max_z": None,
    }
    if key in POSTERIORS:
        cmp = compare(target, positions)
        rec["max_z"] = cmp.max_abs_z
        rec["worst"] = cmp.names[int(np.argmax(np.abs(cmp.z)))]
    return rec


def _attr(obj, name):
    value = getattr(obj, name, None)
    return None if value is None else float(np.median(np.asarray(value, dtype=float)))


def run_ours(key, seed, kernel_kw, sample_kw, *, chains, n_warmup, n_draws, make=None) -> dict:
    """One run of ``sample(lahmc(target, **kernel_kw), ..., warmup=n_warmup, **sample_kw)``
    (the OLD API shim's settings under ``kernel_kw``, when ``lahmc`` needs them), or of
    ``make(target, **kernel_kw)`` instead of ``lahmc``."""
    target = make_target(key)
    init, sample_seed = initial(key, target, seed, chains)
    if make is not None:
        kernel = make(target, **kernel_kw)
    else:
        kw = dict(kernel_kw) if NEW_API else {**OLD_API_SETTINGS, **kernel_kw}
        kernel = lahmc(target, **kw)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        start = time.perf_counter()
        trace = sample(kernel, init, n_draws, seed=sample_seed, warmup=n_warmup, **sample_kw)
        wall = time.perf_counter() - start
    warm = trace.warmup
    rec = figures(
        key,
        target,
        trace.positions,
        float(np.sum(trace.grad_evals)),
        float(np.sum(warm.grad_evals)),
        wall,
    )
    refresh = trace.kernel.get("refresh", {})
    beta = _attr(warm, "beta")
    rec.update(
        step_size=_attr(warm, "step_size"),
        n_leapfrog=_attr(warm, "n_leapfrog"),
        trajectory_length=_attr(warm, "trajectory_length"),
        beta=beta if beta is not None else refresh.get("beta"),
        look_ahead=_attr(warm, "look_ahead") or trace.kernel.get("max_rungs"),
        sampling_wall=getattr(trace, "wall_time", None),
        warmup_wall=_attr(warm, "wall_time"),
        warnings=len(caught),
    )
    return rec


def run_nuts(key, seed, chain_method, *, chains, n_warmup, n_draws) -> dict:
    target = make_target(key)
    init, _ = initial(key, target, seed, chains)
    res = nuts_peers.run_nuts(
        target, init, seed, n_warmup=n_warmup, n_draws=n_draws, chain_method=chain_method
    )
    rec = figures(key, target, res["positions"], res["grads"], res["warmup_grads"], res["wall"])
    rec.update(
        step_size=res["step_size"],
        n_leapfrog=res["mean_steps"],
        trajectory_length=res["step_size"] * res["mean_steps"],
        beta=None,
        look_ahead=None,
        compile=res["compile"],
    )
    return rec


def _g(value, fmt=".3g") -> str:
    return "–" if value is None else f"{value:{fmt}}"


HEADER = (
    f"{'target':<15} {'sampler':<22} {'seed':>4} {'ESS/1kg':>8} {'+warm':>8} {'ESS/s':>8} "
    f"{'R-hat':>6} {'max|z|':>6} {'ε':>8} {'M':>6} {'εM':>6} {'β':>5} {'K':>2} {'wall s':>6}"
)


def format_row(key: str, sampler: str, seed: int, r: dict) -> str:
    z = "" if r["max_z"] is None else f"{r['max_z']:.2f}" + ("" if r["max_z"] <= Z_MAX else "!")
    extra = f"  warnings {r['warnings']}" if r.get("warnings") else ""
    if r.get("compile") is not None:
        extra += f"  (compile {r['compile']:.1f} s excluded)"
    return (
        f"{key:<15} {sampler:<22} {seed:>4} {r['per_1000']:>8.3g} {r['per_1000_warm']:>8.3g} "
        f"{r['ess_per_s']:>8.3g} {r['rhat']:>6.3f} {z:>6} {_g(r['step_size']):>8} "
        f"{_g(r['n_leapfrog']):>6} {_g(r['trajectory_length']):>6} {_g(r['beta'], '.2g'):>5} "
        f"{_g(r['look_ahead'], '.0f'):>2} {r['wall']:>6.2f}{extra}"
    )


def med_range(rows: list[dict], field: str) -> str:
    v = np.array([r[field] for r in rows], dtype=float)
    return f"{np.median(v):.3g} [{v.min():.3g}–{v.max():.3g}]"


def median(rows: list[dict], field: str) -> float:
    return float(np.median([r[field] for r in rows]))


def nuts_reference(key: str, nuts: dict) -> tuple[tuple[float, float, float], str] | None:
    """NUTS's figures (sampling, with warm-up, ESS/s), each the better median of the chain
    methods run (their draws agree up to rounding; ESS/s is the faster one's), or the
    quoted ones; None for a target without a NUTS figure."""
    runs = {cm: rows for (k, cm), rows in nuts.items() if k == key}
    if runs:
        fields = ("per_1000", "per_1000_warm", "ess_per_s")
        best = tuple(max(median(rows, f) for rows in runs.values()) for f in fields)
        return best, "measured (best of " + "/".join(runs) + ")"
    if key in QUOTED_NUTS:
        return QUOTED_NUTS[key], "quoted"
    return None


def _mark(ok: bool) -> str:
    return "yes" if ok else "NO"


def print_summary(ours: dict, nuts: dict) -> None:
    print(
        f"\n## Summary: {SIDE}{' (defaults)' if NEW_API else ''} against NUTS, medians over seeds; "
        "aims: sampling ≥ 1.5× NUTS (Gaussians, eight schools), ≥ 1× (rough well); "
        f"with warm-up ≥ 1× and R-hat ≤ {RHAT_MAX} on every seed; ESS/s with warm-up ≥ 1×"
    )
    print(
        "| target | ESS/1000 grads: ours | NUTS | ratio | aim met | with warm-up: ours | NUTS | "
        "ratio | max R-hat (ours) | aim met | ESS/s: ours | NUTS | ratio | aim met | "
        "max abs z ≤ 5 | NUTS from |"
    )
    print("|" + "---|" * 16)
    for key, rows in ours.items():
        ref = nuts_reference(key, nuts)
        rmax = max(r["rhat"] for r in rows)
        zs = [r["max_z"] for r in rows if r["max_z"] is not None]
        zcol = f"{sum(z <= Z_MAX for z in zs)}/{len(zs)} (max {max(zs):.2f})" if zs else "–"
        ours_med = [median(rows, f) for f in ("per_1000", "per_1000_warm", "ess_per_s")]
        cells = [key]
        for i, (ours_v, aim) in enumerate(zip(ours_med, (AIMS.get(key), 1.0, 1.0), strict=True)):
            if ref is None:
                cells += [f"{ours_v:.3g}", "–", "–"]
            else:
                ratio = ours_v / ref[0][i]
                cells += [f"{ours_v:.3g}", f"{ref[0][i]:.3g}", f"{ratio:.2f}×"]
            if i == 1:
                cells.append(f"{rmax:.3f}")
            ok = ref is not None and aim is not None and ours_v >= aim * ref[0][i]
            if i == 1:
                ok = ok and rmax <= RHAT_MAX
            cells.append("–" if ref is None or aim is None else _mark(ok))
        cells += [zcol, "–" if ref is None else ref[1]]
        print("| " + " | ".join(cells) + " |")
    if nuts:
        print(
            "\nNUTS as measured here beside the quoted figures (sampling / with warm-up / ESS/s):"
        )
        print("| target | chain_method | ESS/1000 grads | with warm-up | ESS/s | wall s | quoted |")
        print("|---|---|---|---|---|---|---|")
        for (key, cm), rows in nuts.items():
            q = QUOTED_NUTS.get(key)
            print(
                f"| {key} | {cm} | {med_range(rows, 'per_1000')} | "
                f"{med_range(rows, 'per_1000_warm')} | {med_range(rows, 'ess_per_s')} | "
                f"{med_range(rows, 'wall')} | "
                + ("–" if q is None else f"{q[0]:g} / {q[1]:g} / {q[2]:g}")
                + " |"
            )


def print_ablation(ablation: dict, ours: dict) -> None:
    print(
        f"\n## Ablation and alternatives: {SIDE} with one quantity fixed, or another "
        f"kernel (medians; ratio to {SIDE})"
    )
    print(
        "| target | variant | ESS/1000 grads | with warm-up | ESS/s | max R-hat "
        "| ratio (sampling) |"
    )
    print("|---|---|---|---|---|---|---|")
    for (key, label), rows in ablation.items():
        base = median(ours[key], "per_1000") if key in ours else float("nan")
        print(
            f"| {key} | {label} | {med_range(rows, 'per_1000')} | "
            f"{med_range(rows, 'per_1000_warm')} | {med_range(rows, 'ess_per_s')} | "
            f"{max(r['rhat'] for r in rows):.3f} | {median(rows, 'per_1000') / base:.2f}× |"
        )


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="2 seeds, 500 + 1000 steps, fewer targets")
    ap.add_argument("--seeds", type=int, default=None, help="seeds 0 .. N-1 (5; quick 2)")
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--targets", nargs="+", choices=TARGETS, default=None)
    ap.add_argument("--no-nuts", action="store_true", help="skip NumPyro; quote the issue's NUTS")
    ap.add_argument(
        "--chain-methods",
        default=None,
        help="NumPyro chain methods, comma-separated (vectorized,sequential; quick: vectorized)",
    )
    ap.add_argument("--ablation", action="store_true", help="add the rows of ABLATIONS")
    ap.add_argument("--json", type=Path, default=None, help="write every run's record here")
    return ap


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    n_seeds = args.seeds or (2 if args.quick else 5)
    n_warmup, n_draws = (500, 1000) if args.quick else (1000, 2000)
    keys = args.targets or (QUICK_TARGETS if args.quick else TARGETS)
    chain_methods = (
        args.chain_methods or ("vectorized" if args.quick else "vectorized,sequential")
    ).split(",")
    common = {"chains": args.chains, "n_warmup": n_warmup, "n_draws": n_draws}
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    peer = None if args.no_nuts else nuts_peers.versions()
    nuts_keys = [k for k in keys if k in QUOTED_NUTS] if peer else []
    print(
        f"# tuning-free benchmark, {when}; {args.chains} chains × ({n_warmup} warm-up + "
        f"{n_draws} draws), seeds 0–{n_seeds - 1}; package side: {SIDE}"
    )
    if not NEW_API:
        print(
            "# OLD API: lahmc() still needs step_size, n_leapfrog, beta; this run uses "
            f"lahmc(t, **{OLD_API_SETTINGS}) with sample(..., warmup={n_warmup}) — "
            "harness smoke output, not the defaults"
        )
    if peer:
        errors = nuts_peers.check_potentials({k: make_target(k) for k in nuts_keys})
        worst = max(errors.values(), default=0.0)
        print(f"# NUTS: {peer}; JAX log density = -energy to {worst:.1e} (relative)")
    elif args.no_nuts:
        print("# NUTS not run (--no-nuts): the NUTS columns are the issue's quoted numbers")
    else:
        print("# NumPyro/JAX not importable: the NUTS columns are the issue's quoted numbers")
    # numba and the drivers load once before anything is timed
    run_ours("gauss2", 99, {}, {}, chains=args.chains, n_warmup=50, n_draws=300)
    print(HEADER, flush=True)
    ours: dict[str, list[dict]] = {}
    nuts: dict[tuple[str, str], list[dict]] = {}
    ablation: dict[tuple[str, str], list[dict]] = {}
    records = []
    start = time.perf_counter()
    for key in keys:
        for seed in range(n_seeds):
            rec = run_ours(key, seed, {}, {}, **common)
            ours.setdefault(key, []).append(rec)
            records.append({"target": key, "sampler": SIDE, "seed": seed, **rec})
            print(format_row(key, SIDE, seed, rec), flush=True)
        for cm in chain_methods if key in nuts_keys else ():
            for seed in range(n_seeds):
                rec = run_nuts(key, seed, cm, **common)
                nuts.setdefault((key, cm), []).append(rec)
                records.append({"target": key, "sampler": f"NUTS {cm}", "seed": seed, **rec})
                print(format_row(key, f"NUTS {cm}", seed, rec), flush=True)
        for label, make in ALTERNATIVES.get(key, ()) if NEW_API else ():
            for seed in range(n_seeds):
                rec = run_ours(key, seed, {}, {}, make=make, **common)
                ablation.setdefault((key, label), []).append(rec)
                records.append({"target": key, "sampler": label, "seed": seed, **rec})
                print(format_row(key, label, seed, rec), flush=True)
        for label, kernel_kw, sample_kw in ABLATIONS if args.ablation else ():
            if not NEW_API and "length_jitter" in kernel_kw:
                print(f"{key:<15} {label:<22} (skipped: OLD API has no length_jitter)")
                continue
            for seed in range(n_seeds):
                rec = run_ours(key, seed, kernel_kw, sample_kw, **common)
                ablation.setdefault((key, label), []).append(rec)
                records.append({"target": key, "sampler": label, "seed": seed, **rec})
                print(format_row(key, label, seed, rec), flush=True)
    print_summary(ours, nuts)
    if ablation:
        print_ablation(ablation, ours)
    print(f"\n# {time.perf_counter() - start:.0f} s in runs (after the start-up checks)")
    if args.json:
        meta = {"when": when, "new_api": NEW_API, "nuts": peer, "argv": argv or sys.argv[1:]}
        args.json.write_text(json.dumps({"meta": meta, "runs": records}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
