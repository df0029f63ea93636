"""The suite per second: the default kernel against NUTS's chains, compile time left out
by a warm cache on both sides.

Protocol: ``run_suite`` on the default models (``ladder_mcmc.bench.registry.DEFAULT``), JAX
targets on the compiled loop (``backend="jax"``), 4 chains × (1000 warm-up + 2000
draws), seeds 0–1 (``--seeds``), NUTS (NumPyro's defaults) beside it, one suite run per
NUTS ``chain_method`` (``--methods``: ``vectorized`` and ``sequential``; ``parallel``
runs in a process of its own with 4 XLA host devices, set before JAX starts); ours runs
in each. ``compile_out="warm"`` (:mod:`ladder_mcmc.bench.warm_cache`): every run is made
three times, JAX's in-memory caches cleared before each; the cold run's draws are judged
and its wall time is "with compilation"; the third run, with JAX's persistent cache warm,
less its compile events, is "compile out".

Per model: medians over seeds of ESS/s (min bulk ESS of x and x², warm-up included),
ours over every suite run of the files given, NUTS over every run of each method; each
ratio (per second compile out, per second with compilation, per gradient with warm-up)
is against NUTS's best chain method by that figure. Run on an idle machine::

    python benchmarks/per_second.py --json seq_vec.json
    python benchmarks/per_second.py --methods parallel --json parallel.json
    python benchmarks/per_second.py --report seq_vec.json parallel.json   # one table
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from machine import machine_facts  # noqa: E402

from ladder_mcmc.bench import NutsSettings, run_suite, to_json  # noqa: E402
from ladder_mcmc.bench.registry import DEFAULT  # noqa: E402

METHODS = ("vectorized", "sequential", "parallel")
NUTS = "NUTS (NumPyro)"


def run(seeds: int, models: tuple[str, ...], methods: tuple[str, ...]) -> dict:
    """One suite run per NUTS chain method, as ``{method: bench JSON}``."""
    out = {}
    for method in methods:
        result = run_suite(
            models=models, seeds=tuple(range(seeds)), nuts=True, backend="jax",
            nuts_settings=NutsSettings(chain_method=method), compile_out="warm",
            on_run=lambda r: print(
                f"{r.model} · {r.sampler} · seed {r.seed}: ESS/s {r.figures.ess_per_second:.3g}"
                f" (compile {r.compile_time:.2f} s), passed {r.passed}", flush=True),
        )  # fmt: skip
        out[method] = to_json(result)
    return out


def _per_run(run: dict) -> dict:
    f = run["figures"]
    ess, wall = f["min_ess"] or np.nan, run["wall_time"] or np.nan
    return {
        "out": f["ess_per_second"] or np.nan,
        "in": ess / (wall + (run["compile_time"] or 0.0)),
        "grad": f["ess_per_1000_grads_with_warmup"] or np.nan,
        "passed": run["verdict"]["passed"],
    }


def _median(runs: list[dict], key: str) -> float:
    return float(np.median([r[key] for r in runs]))


def report(results: list[tuple[str, dict]]) -> list[str]:
    """The per-model table and the ranges, as Markdown lines (``results``: ``(method,
    bench JSON)`` pairs; the runs of a method that appears twice pooled)."""
    methods = tuple(dict.fromkeys(method for method, _ in results))
    by: dict[tuple[str, str, str], list[dict]] = {}
    for method, result in results:
        for r in result["runs"]:
            side = "nuts" if r["sampler"] == NUTS else "ours"
            by.setdefault((r["model"], side, method if side == "nuts" else ""), []).append(
                _per_run(r)
            )
    lines = [
        "| model | ours ESS/s | "
        + " | ".join(f"NUTS {m}" for m in methods)
        + " | × NUTS per gradient, warm-up in | × NUTS per second, compile out | "
        "with compilation | ours passed |",
        "|---|---|" + "---|" * len(methods) + "---|---|---|---|",
    ]
    ratios: dict[str, list[float]] = {"out": [], "in": [], "grad": []}
    models = dict.fromkeys(r["model"] for _, res in results for r in res["runs"])
    for model in models:
        ours = by[(model, "ours", "")]
        nuts = {m: by[(model, "nuts", m)] for m in methods}
        best = {k: max(methods, key=lambda m, k=k: _median(nuts[m], k)) for k in ratios}
        row = {k: _median(ours, k) / _median(nuts[best[k]], k) for k in ratios}
        for k in ratios:
            ratios[k].append(row[k])
        lines.append(
            f"| {model} | {_median(ours, 'out'):.3g} | "
            + "".join(f"{_median(nuts[m], 'out'):.3g} | " for m in methods)
            + f"{row['grad']:.2f}× | "
            f"**{row['out']:.2f}×** ({best['out']}) | {row['in']:.2f}× | "
            f"{sum(r['passed'] for r in ours)}/{len(ours)} |"
        )
    lines.append("")
    for k, name in (("out", "per second, compile out"), ("in", "with compilation"),
                    ("grad", "per gradient")):  # fmt: skip
        v = np.array(ratios[k])
        lines.append(f"{name}: {v.min():.2f}–{v.max():.2f}×, median {np.median(v):.2f}×")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--seeds", type=int, default=2, help="seeds 0 … N−1 (2)")
    ap.add_argument("--models", nargs="+", default=list(DEFAULT), help="the default set")
    ap.add_argument(
        "--methods", nargs="+", choices=METHODS, default=["vectorized", "sequential"],
        help="NUTS's chain methods, one suite run each (vectorized sequential)",
    )  # fmt: skip
    ap.add_argument("--json", type=Path, help="write the suite runs here")
    ap.add_argument(
        "--report", type=Path, nargs="+", help="print one table of --json files; run nothing"
    )
    args = ap.parse_args(argv)
    if args.report:
        results = [pair for path in args.report for pair in json.loads(path.read_text()).items()]
        print("\n".join(report(results)))
        return 0
    if "parallel" in args.methods:
        if len(args.methods) > 1:
            ap.error("--methods parallel runs in a process of its own (4 XLA host devices)")
        if "jax" not in sys.modules:  # before JAX starts: one XLA host device per chain
            flags = os.environ.get("XLA_FLAGS", "")
            os.environ["XLA_FLAGS"] = flags + " --xla_force_host_platform_device_count=4"
        import jax

        if jax.device_count() < 4:
            ap.error(f"--methods parallel needs 4 JAX devices, found {jax.device_count()}")
    print("\n".join(machine_facts()), flush=True)
    runs = run(args.seeds, tuple(args.models), tuple(args.methods))
    if args.json:
        args.json.write_text(json.dumps(runs))
    print("\n".join(report(list(runs.items()))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
