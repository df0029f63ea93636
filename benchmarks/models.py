"""LAHMC with defaults against NumPyro's NUTS on the same JAX models, side by side.

Models: the logistic regression of ``examples/logistic_regression.py`` (1000 × 20
synthetic design, N(0, 1) priors; 21 parameters) and eight schools non-centred
(posteriordb data, ``ladder_mcmc.models.posteriors.jax_log_density``; 10 parameters);
when named in ``--models``, ``gauss100``: the 100-d ``IllConditionedGaussian`` (variances
log-spaced in [1, 10⁶]) written in JAX, started uniform on (−2, 2).
Both samplers get the SAME JAX log density of one point: the package through
``from_jax(log_density, dim, parameters=...)`` (``jit(vmap(value_and_grad))``, float64),
NUTS as ``potential_fn = -log_density``.

Protocol, per model, for 4 and for 64 chains, seeds 0–4 (``--seeds N``: 0 .. N-1):

* package: a fresh ``from_jax`` target, ``sample(lahmc(target), init, 2000, seed=s)``
  with its default 1000 warm-up steps, everything adapted; on the host loop
  (``backend="numpy"``, "numpy loop") and compiled by JAX in blocks of steps
  (``backend="jax"``, "JAX loop"), the same draws to rounding (``--loop numpy|jax|both``,
  default both; the log counts the JAX loop's compilations among all);
* NUTS: NumPyro defaults (target acceptance 0.8, diagonal mass), 1000 warm-up + 2000,
  float64, ``chain_method="vectorized"`` (all chains in one batched loop, the batched
  peer of the package's one call for all chains), through ``benchmarks/nuts_peers.py``.

Both start from the same points: logistic regression uniform on (−2, 2) per coordinate
from ``default_rng(seed)`` (``sample`` gets ``seed + 10000``), eight schools as
``benchmarks/tuning_free.py`` starts it (uniform on (−0.5, 0.5), ``posterior_seed``).
Figures (median [min–max] over seeds): min over coordinates of min(bulk ESS of x_i, of
x_i²) per 1000 gradient evaluations of all chains (padded rows not counted), sampling
and with warm-up counted; ESS per second of warm-up + sampling with compile time in
(the package: the wall time of building the target and ``sample``; NUTS: of
``warmup`` + ``run``) and with it out (compile time = JAX's monitoring events for
tracing, lowering and XLA compilation, see ``nuts_peers.py``); max rank-normalised
split R̂; the seconds compiling and the number of XLA compilations per run. A "ratio"
row per loop divides the package's medians by NUTS's. JAX's persistent compilation cache is off
(its default; ``--cache`` keeps the one ``nuts_peers.versions`` switches on), so every
run pays its own compilations, as a user's first run in a fresh process does: NumPyro
compiles its warm-up and sampling loops anew at each call, the package's target its
``jit(vmap(value_and_grad))`` once per padded batch size (powers of two: at most
``log2(chains) + 1``) and once more for the gradient check ``sample`` makes at the
start (4 points × 2 × dim rows, padded).

Adapter overhead: per model and number of chains, the median time of one batched call
of ``target.energy_and_grad(x)`` and of the bare ``jax.jit(jax.vmap(jax.value_and_grad
(potential)))`` called directly on the same float64 numpy ``x`` (blocked until ready),
both under x64, in alternating blocks of 50 calls; the ratio is the median over pairs
of neighbouring blocks of their medians' ratio adapter / bare. Aim ≤ 1.20.

Needs JAX and NumPyro (``pip install -e ".[peers]"``). Timings depend on the machine's
load: run on a quiet machine. Run::

    nice -n 10 python benchmarks/models.py --out benchmarks/results/models.md  # ~8 min
    nice -n 10 python benchmarks/models.py --quick          # smoke run, ~1 min
    nice -n 10 python benchmarks/models.py --models eight_schools --chains 64 --seeds 3
    python benchmarks/models.py --overhead-only             # the adapter overhead, ~15 s

``--out FILE`` puts the block (date, commit, machine, versions, the tables and a line per
run) on top of FILE.
"""

from __future__ import annotations

import argparse
import datetime
import subprocess
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
sys.path.insert(1, str(HERE.parent / "examples"))
import logistic_regression  # noqa: E402  (examples/logistic_regression.py)
import nuts_peers  # noqa: E402
from machine import machine_facts  # noqa: E402
from posteriordb import posterior_seed  # noqa: E402

from ladder_mcmc import lahmc, sample  # noqa: E402
from ladder_mcmc.diagnostics import min_bulk_ess, rank_rhat  # noqa: E402
from ladder_mcmc.models import IllConditionedGaussian, from_jax  # noqa: E402
from ladder_mcmc.models import posteriors as pdb  # noqa: E402

EIGHT = "eight_schools-eight_schools_noncentered"
MODELS = ("logistic", "eight_schools")
#: run only when named in ``--models``: the 100-d ill-conditioned Gaussian, the model on
#: which the batch's margin over vectorized NUTS was first measured (numpy target)
EXTRA_MODELS = ("gauss100",)
#: the package's sides: its host loop (``backend="numpy"``), or the loop compiled by JAX
#: in blocks of steps (``backend="jax"``)
OURS = {"numpy": "lahmc() numpy loop", "jax": "lahmc() JAX loop"}
NUTS = "NUTS"
SIDES = (*OURS.values(), NUTS)
OVERHEAD_AIM = 1.20


def model(key: str) -> dict:
    """``log_density``, ``dim`` and ``parameters`` of a model, and ``init(seed, chains)``
    -> (initial points, seed for ``sample``)."""
    if key == "logistic":
        x, y, _ = logistic_regression.synthetic_data()
        target = logistic_regression.make_target(x, y)

        def init(seed, chains):
            return target.initial_points(chains, np.random.default_rng(seed)), seed + 10_000

        log_density = logistic_regression.make_log_density(x, y)
        return {
            "log_density": log_density,
            "dim": target.dim,
            "parameters": target.parameters,
            "init": init,
        }
    if key == "gauss100":
        import jax.numpy as jnp

        precisions = jnp.asarray(IllConditionedGaussian(100).precisions)

        def uniform(seed, chains):
            return np.random.default_rng(seed).uniform(-2, 2, (chains, 100)), seed + 10_000

        return {
            "log_density": lambda x: -0.5 * jnp.sum(x * x * precisions),
            "dim": 100,
            "parameters": None,
            "init": uniform,
        }
    target = pdb.load(EIGHT)

    def init(seed, chains):
        rng = np.random.default_rng(posterior_seed(seed, EIGHT))
        return target.initial_points(chains, rng, radius=0.5), rng

    return {
        "log_density": pdb.jax_log_density(target),
        "dim": target.dim,
        "parameters": target.parameters,
        "init": init,
    }


def figures(positions, grads: float, warm_grads: float, wall: float, compile_s: float) -> dict:
    ess = min_bulk_ess(positions)
    return {
        "per_1000": 1000.0 * ess / grads,
        "per_1000_warm": 1000.0 * ess / (grads + warm_grads),
        "ess_per_s": ess / wall,  # compile time in
        "ess_per_s_net": ess / (wall - compile_s),  # compile time out
        "rhat": float(np.max(rank_rhat(positions))),
        "compile": compile_s,
        "wall": wall,
    }


def run_ours(
    m: dict, seed: int, chains: int, n_warmup: int | None, n_draws: int, loop: str = "numpy"
) -> dict:
    """The package's run; ``loop``: ``"numpy"`` (the host loop) or ``"jax"`` (the loop
    compiled by JAX): ``sample``'s ``backend``."""
    from ladder_mcmc.engine.jax_loop import compilations as jax_loop_compilations

    init, sample_seed = m["init"](seed, chains)
    kw = {"backend": loop} if n_warmup is None else {"warmup": n_warmup, "backend": loop}
    traces = jax_loop_compilations()
    compiled, count = nuts_peers.compile_totals()
    with warnings.catch_warnings(record=True) as caught:  # counted, not shown
        warnings.simplefilter("always")
        start = time.perf_counter()
        target = from_jax(m["log_density"], m["dim"], parameters=m["parameters"])
        trace = sample(lahmc(target), init, n_draws, seed=sample_seed, **kw)
        wall = time.perf_counter() - start
    compiled_now, count_now = nuts_peers.compile_totals()
    grads, warm = float(np.sum(trace.grad_evals)), float(np.sum(trace.warmup.grad_evals))
    rec = figures(trace.positions, grads, warm, wall, compiled_now - compiled)
    rec["compilations"] = count_now - count
    rec["loop_compilations"] = jax_loop_compilations() - traces
    rec["warnings"] = sorted({type(w.message).__name__ for w in caught})
    return rec


def run_nuts(m: dict, seed: int, chains: int, n_warmup: int, n_draws: int) -> dict:
    init, _ = m["init"](seed, chains)
    log_density = m["log_density"]
    res = nuts_peers.run_nuts(
        None,
        init,
        seed,
        n_warmup=n_warmup,
        n_draws=n_draws,
        chain_method="vectorized",
        potential_fn=lambda x: -log_density(x),
    )
    wall = res["wall"] + res["compile"]  # run_nuts subtracts it
    rec = figures(res["positions"], res["grads"], res["warmup_grads"], wall, res["compile"])
    rec["compilations"] = res["compilations"]
    return rec


def adapter_overhead(m: dict, chains: int, calls: int, block: int = 50) -> dict:
    """Median seconds per batched call of three sides on the same float64 numpy input
    (x64 is on: ``nuts_peers.versions``): ``bare``, the jitted
    ``jit(vmap(value_and_grad(potential)))`` blocked until ready (JAX arrays out);
    ``numpy``, the same with both outputs turned into numpy arrays (what any numpy-driven
    sampler must do); ``adapter``, the adapter's ``energy_and_grad``. The sides run in
    rotating blocks of ``block`` consecutive calls (as a sampler calls them), ``calls``
    per side in all; each side's figure is the median of its blocks' medians, and
    ``ratio`` / ``ratio_numpy`` the median over rounds of adapter / bare and adapter /
    numpy, so that load from other processes, which shifts these latencies between modes
    (XLA's CPU thread handing the result back), hits all alike. Checks first that all
    agree."""
    import jax

    log_density = m["log_density"]
    target = from_jax(log_density, m["dim"])
    bare = jax.jit(jax.vmap(jax.value_and_grad(lambda x: -log_density(x))))
    x = m["init"](0, chains)[0]
    e, g = target.energy_and_grad(x)
    e0, g0 = jax.block_until_ready(bare(x))
    if not (np.allclose(e, e0, rtol=1e-12) and np.allclose(g, g0, rtol=1e-12)):
        raise ValueError("the adapter and the bare function disagree")
    ready = jax.block_until_ready

    def as_numpy():
        e, g = bare(x)
        return np.asarray(e), np.asarray(g)

    sides = (lambda: ready(bare(x)), as_numpy, lambda: target.energy_and_grad(x))
    clock = time.perf_counter_ns
    rounds = max(3, calls // block)
    medians = np.empty((rounds, 3))  # per round: bare, numpy, adapter
    times = np.empty(block)
    for r in range(rounds):
        for k in np.roll(np.arange(3), r):
            call = sides[k]
            for i in range(block):
                t0 = clock()
                call()
                times[i] = clock() - t0
            medians[r, k] = np.median(times)
    bare_s, numpy_s, adapter_s = np.median(medians, axis=0) * 1e-9
    return {
        "bare": float(bare_s),
        "numpy": float(numpy_s),
        "adapter": float(adapter_s),
        "ratio": float(np.median(medians[:, 2] / medians[:, 0])),
        "ratio_numpy": float(np.median(medians[:, 2] / medians[:, 1])),
    }


def med_range(values, fmt=".3g") -> str:
    v = np.asarray(values, dtype=float)
    return f"{np.median(v):{fmt}} [{v.min():{fmt}}–{v.max():{fmt}}]"


FIELDS = ("per_1000", "per_1000_warm", "ess_per_s", "ess_per_s_net")


def results_table(runs: dict) -> list[str]:
    """Markdown: per model and chains, a row per sampler (median [min–max] over seeds)
    and the ratio of the package's medians to NUTS's."""
    lines = [
        "| model | chains | sampler | ESS/1000 grads | with warm-up | ESS/s, compile in "
        "| ESS/s, compile out | max R̂ | compile s | compilations |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (key, chains), by_side in runs.items():
        for side, rows in by_side.items():
            if not rows:
                continue
            cells = [med_range([r[f] for r in rows]) for f in FIELDS]
            rhat = max(r["rhat"] for r in rows)
            comp = med_range([r["compile"] for r in rows], ".2f")
            count = med_range([r["compilations"] for r in rows], ".0f")
            lines.append(
                f"| {key} | {chains} | {side} | "
                + " | ".join(cells)
                + f" | {rhat:.3f} | {comp} | {count} |"
            )
        for side in OURS.values():
            if not (by_side.get(side) and by_side.get(NUTS)):
                continue
            ratios = [
                np.median([r[f] for r in by_side[side]]) / np.median([r[f] for r in by_side[NUTS]])
                for f in FIELDS
            ]
            cells = " | ".join(f"**{q:.2f}×**" for q in ratios)
            lines.append(f"| {key} | {chains} | {side} / NUTS | {cells} | – | – | – |")
    return lines


def overhead_table(overhead: dict) -> list[str]:
    lines = [
        "| model | chains | bare µs/call | bare + numpy out | adapter µs/call | ratio to bare "
        "| ratio to bare + numpy | aim ≤ 1.20 (to bare) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for (key, chains), o in overhead.items():
        ok = "yes" if o["ratio"] <= OVERHEAD_AIM else "NO"
        lines.append(
            f"| {key} | {chains} | {o['bare'] * 1e6:.1f} | {o['numpy'] * 1e6:.1f} | "
            f"{o['adapter'] * 1e6:.1f} | {o['ratio']:.2f} | {o['ratio_numpy']:.2f} | {ok} |"
        )
    return lines


def commit() -> str:
    def git(*args):
        done = subprocess.run(["git", *args], cwd=HERE, capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else ""

    sha = git("rev-parse", "--short", "HEAD") or "unknown"
    return sha + (" (with local changes)" if git("status", "--porcelain") else "")


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="smoke run: 1 seed, 200 + 300 steps")
    ap.add_argument("--seeds", type=int, default=None, help="seeds 0 .. N-1 (5; quick 1)")
    ap.add_argument(
        "--models",
        nargs="+",
        choices=MODELS + EXTRA_MODELS,
        default=list(MODELS),
        help="models to run (the default two; gauss100 only if named)",
    )
    ap.add_argument("--chains", nargs="+", type=int, default=[4, 64])
    ap.add_argument("--no-nuts", action="store_true", help="the package's side only")
    ap.add_argument(
        "--loop",
        choices=("numpy", "jax", "both"),
        default="both",
        help="the package's loop: numpy (the host loop), jax (compiled by JAX), or both\n"
        "side by side (default)",
    )
    ap.add_argument("--overhead-only", action="store_true", help="only the adapter overhead")
    ap.add_argument(
        "--overhead-calls",
        type=int,
        default=None,
        help="calls per side in the adapter-overhead timing (4000; quick 400; 0 skips it)",
    )
    ap.add_argument(
        "--cache",
        action="store_true",
        help="keep nuts_peers' persistent compilation cache (NUTS's loops then load from it\n"
        "after their first compilation: 'compile in' figures are no longer a fresh run's)",
    )
    ap.add_argument(
        "--out",
        type=Path,
        default=None,
        help="write the Markdown block here (on top, if it exists)",
    )
    return ap


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    n_seeds = args.seeds or (1 if args.quick else 5)
    n_warmup, n_draws = (200, 300) if args.quick else (1000, 2000)
    calls = (
        args.overhead_calls if args.overhead_calls is not None else (400 if args.quick else 4000)
    )
    peer = nuts_peers.versions()  # float64, compile listener, persistent cache
    if peer is None:
        print("this benchmark needs JAX and NumPyro: pip install -e '.[peers]'")
        return 1
    if not args.cache:  # JAX's default: every run compiles afresh, as a user's would
        import jax

        jax.config.update("jax_enable_compilation_cache", False)
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    command = "python benchmarks/models.py " + " ".join(argv if argv is not None else sys.argv[1:])
    head = [
        f"## {when}: LAHMC defaults against NUTS on JAX models (`benchmarks/models.py`)",
        "",
        f"At commit {commit()}. {peer}. Seeds 0–{n_seeds - 1}, {n_warmup} warm-up + "
        f'{n_draws} draws per chain; NUTS `chain_method="vectorized"`; persistent '
        f"compilation cache {'on' if args.cache else 'off'}.",
        "",
        "```",
        command.strip(),
        *machine_facts(),
        "```",
    ]
    print("\n".join(head), flush=True)
    models = {key: model(key) for key in args.models}
    loops = ("numpy", "jax") if args.loop == "both" else (args.loop,)
    if not args.overhead_only:  # the loops load (and compile) once before anything is timed
        for loop in loops:
            run_ours(models[args.models[0]], 99, 4, 50, 100, loop)
    runs: dict[tuple[str, int], dict[str, list[dict]]] = {}
    log: list[str] = []  # a line per run
    start = time.perf_counter()
    for key in args.models if not args.overhead_only else ():
        for chains in args.chains:
            cell = runs.setdefault((key, chains), {side: [] for side in SIDES})
            for seed in range(n_seeds):
                todo = []
                for loop in loops:
                    # the package's default warm-up, unless --quick
                    ours = run_ours(
                        models[key], seed, chains, n_warmup if args.quick else None, n_draws, loop
                    )
                    cell[OURS[loop]].append(ours)
                    todo.append((OURS[loop], ours))
                if not args.no_nuts:
                    nuts = run_nuts(models[key], seed, chains, n_warmup, n_draws)
                    cell[NUTS].append(nuts)
                    todo.append((NUTS, nuts))
                for side, r in todo:
                    log.append(
                        f"{key:<14} {chains:>3} {side:<18} seed {seed}: ESS/1kg "
                        f"{r['per_1000']:.3g} (+warm {r['per_1000_warm']:.3g}), ESS/s "
                        f"{r['ess_per_s']:.3g} (net {r['ess_per_s_net']:.3g}), R̂ "
                        f"{r['rhat']:.3f}, wall {r['wall']:.1f} s, compile "
                        f"{r['compile']:.2f} s in {r['compilations']} compilations"
                        + (
                            f" ({r['loop_compilations']} of the sampling loop)"
                            if r.get("loop_compilations")
                            else ""
                        )
                        + (f"; warned: {', '.join(r['warnings'])}" if r.get("warnings") else "")
                    )
                    print(log[-1], flush=True)
    overhead = {}
    for key in args.models if calls > 0 else ():
        for chains in args.chains:
            overhead[key, chains] = adapter_overhead(models[key], chains, calls)
    body = []
    if runs:
        body += ["", "### Sampling (median [min–max] over seeds)", "", *results_table(runs)]
    if overhead:
        body += [
            "",
            f"### Adapter overhead per batched call ({calls} calls per side, blocks of 50)",
            "",
            *overhead_table(overhead),
        ]
    body += ["", f"{time.perf_counter() - start:.0f} s in runs."]
    print("\n".join(body))
    if args.out:
        runs_block = ["", "Every run:", "", "```text", *log, "```"] if log else []
        old = args.out.read_text() if args.out.exists() else ""  # newest block on top
        args.out.write_text(
            "\n".join(head + body + runs_block) + "\n" + ("\n" + old if old else "")
        )
        print(f"# written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
