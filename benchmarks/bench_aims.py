"""The suite's aims, from two ``ladder-mcmc bench`` results: the default kernel beside NUTS,
and the same kernel with ``look_ahead=1``.

Protocol: ``ladder-mcmc bench`` at its full sizes (4 chains × (1000 warm-up + 2000 draws)),
seeds 0–4, every model of ``ladder_mcmc.bench.SUITE``; NUTS (NumPyro, its defaults, chains
vectorised) beside the default kernel in the first run. Per model, the medians over seeds
of min(bulk ESS of x, of x²) per 1000 gradient evaluations with the warm-up's gradients
counted (``ess_per_1000_grads_with_warmup``). Printed, per model: runs passed, our figure,
NUTS's, their ratio, the K = 1 figure and K = 4 / K = 1; then the aims:

* every model: R-hat ≤ 1.01 and |z| ≤ 5 on every seed (the suite's verdict, which also
  fails frozen chains and collapsed step sizes);
* per gradient with warm-up: ≥ 1× NUTS on every model, ≥ 1.5× as the median;
* the default's K against K = 1: ≥ 1.2× as the median over models.

Run (on two cores the first takes about 13 minutes, the second under 3)::

    ladder-mcmc bench --seeds 5 --json default.json
    ladder-mcmc bench --seeds 5 --no-nuts --kernel benchmarks/bench_aims.py:look_ahead_1 \
        --json k1.json
    python benchmarks/bench_aims.py default.json k1.json
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import numpy as np

from ladder_mcmc import lahmc

FIGURE = "ess_per_1000_grads_with_warmup"
NUTS = "NUTS (NumPyro)"  # the sampler name of NUTS's rows


def _extremes(ratios: np.ndarray) -> str:
    """``worst …, median …`` of ``ratios``, or what is missing."""
    if np.all(np.isnan(ratios)):
        return "not measured (no rows to compare)"
    low, mid, high = np.nanmin(ratios), np.nanmedian(ratios), np.nanmax(ratios)
    return f"worst {low:.2f}, median {mid:.2f}, best {high:.2f}"


def look_ahead_1(target: Any) -> Any:
    """``lahmc(target, look_ahead=1)``: the default kernel without look-ahead."""
    return lahmc(target, look_ahead=1)


def rows_by(path: str) -> dict[tuple[str, str], dict[str, Any]]:
    """The ``rows`` of a ``bench`` JSON, keyed by (model, sampler)."""
    with open(path) as f:
        return {(r["model"], r["sampler"]): r for r in json.load(f)["rows"]}


def report(default: str, k1: str, label: str = "K = 1") -> list[str]:
    """The per-model table and the aims' verdicts, as lines of Markdown."""
    ours, single = rows_by(default), rows_by(k1)
    models = list(dict.fromkeys(m for m, s in ours if s != NUTS))
    lines = [
        "| model | passed | ESS/1000 grads (with warm-up) | NUTS | × NUTS | NUTS passed "
        f"| {label} | {label} passed | default / {label} |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    vs_nuts, vs_k1, all_passed = [], [], True
    for model in models:
        (row,) = [r for (m, s), r in ours.items() if m == model and s != NUTS]
        nuts = ours.get((model, NUTS))
        one = next((r for (m, s), r in single.items() if m == model and s != NUTS), None)
        all_passed &= row["passed"] == row["runs"]
        ratio = row[FIGURE] / nuts[FIGURE] if nuts else np.nan
        k_ratio = row[FIGURE] / one[FIGURE] if one else np.nan
        vs_nuts.append(ratio)
        vs_k1.append(k_ratio)
        lines.append(
            f"| {model} | {row['passed']}/{row['runs']} | {row[FIGURE]:.3g} | "
            + (
                f"{nuts[FIGURE]:.3g} | {ratio:.2f} | {nuts['passed']}/{nuts['runs']}"
                if nuts
                else "– | – | –"
            )
            + " | "
            + (f"{one[FIGURE]:.3g} | {one['passed']}/{one['runs']}" if one else "– | –")
            + f" | {k_ratio:.2f} |"
        )
    vs_nuts_a, vs_k1_a = np.array(vs_nuts), np.array(vs_k1)
    lines += [
        "",
        f"* every model passes on every seed (aim): {'yes' if all_passed else 'no'}",
        f"* × NUTS (aims: worst ≥ 1, median ≥ 1.5): {_extremes(vs_nuts_a)}",
        f"* default / {label} (aim against K = 1: median ≥ 1.2): {_extremes(vs_k1_a)}",
    ]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("default", help="bench JSON of the default kernel, NUTS beside it")
    parser.add_argument("k1", help="bench JSON of the same kernel with look_ahead=1")
    parser.add_argument("--label", default="K = 1", help="what the second JSON ran")
    args = parser.parse_args()
    print("\n".join(report(args.default, args.k1, args.label)))


if __name__ == "__main__":
    main()
