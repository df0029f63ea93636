"""Figure 2 of the paper: autocorrelation against gradient evaluations, HMC vs LAHMC.

For each target, four runs (HMC and LAHMC, ``β ∈ {1, 0.1}``); for each, the
autocorrelation of :func:`ladder_mcmc.diagnostics.autocorrelation` (known zero
mean, pooled over dimensions and chains) against gradient evaluations per chain,
the gradient evaluations to reach autocorrelation 0.5, and the wall time to
reach it. The summary is the ratio HMC ÷ LAHMC of gradient evaluations to 0.5.
"""

from __future__ import annotations

import math
import time

import numpy as np

from ladder_mcmc.diagnostics.autocorrelation import autocorrelation_vs_grads, grads_to_threshold
from ladder_mcmc.paper import settings

THRESHOLD = 0.5

# Gradient evaluations to autocorrelation 0.5, HMC ÷ LAHMC, from the authors'
# code (github.com/Sohl-Dickstein/LAHMC) run on this machine (issue 4).
AUTHORS_RATIO: dict[tuple[str, float], float] = {
    ("gauss2", 0.1): 3.4,
    ("gauss2", 1.0): 1.4,
    ("gauss100", 0.1): 2.6,
    ("gauss100", 1.0): 1.4,
    ("rough", 0.1): 4.0,
    ("rough", 1.0): 4.5,
}

MAX_CURVE_POINTS = 400


def thin_for(steps: int) -> int:
    """Positions are kept every 10 steps (as in the authors' code) for runs long enough."""
    return max(1, min(10, steps // 100))


def _finite(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def run_condition(
    target_name: str,
    sampler: str,
    beta: float,
    chains: int,
    steps: int,
    seed: int = 0,
    progress: bool = False,
) -> dict:
    """One curve of figure 2: run, autocorrelation, gradients and wall time to 0.5.

    Lags go up to half the run (beyond that the estimate rests on too few pairs).
    """
    target = settings.TARGETS[target_name]()
    kern = settings.kernel(sampler, target, beta)
    settings.announce(
        f"figure2: {target_name} {sampler} beta={beta:g} ({chains} chains x {steps} steps)",
        progress,
    )
    cpu_start = time.process_time()
    trace = settings.run(
        kern,
        target,
        chains,
        steps,
        seed,
        ("figure2", target_name, beta),
        thin=thin_for(steps),
        progress=progress,
    )
    cpu = time.process_time() - cpu_start
    grads, rho = autocorrelation_vs_grads(trace, max_lag=steps // 2, mean=0.0)
    to_half = grads_to_threshold(grads, rho, THRESHOLD)
    per_chain = float(trace.grad_evals.mean())
    share = to_half / per_chain  # fraction of the run needed to reach 0.5
    # log-spaced lags: the curve is plotted against a log axis
    n = len(grads)
    keep = np.unique(np.r_[0, np.geomspace(1, max(n - 1, 1), MAX_CURVE_POINTS).astype(int)])
    return {
        "target": target_name,
        "sampler": sampler,
        "beta": beta,
        "chains": chains,
        "steps": steps,
        "thin": trace.thin,
        "grads_to_half": _finite(to_half),
        "wall_to_half": _finite(trace.wall_time * share),
        "cpu_to_half": _finite(cpu * share),
        "grads_per_step": float(np.mean(trace.grad_evals_per_step)),
        "wall_time": trace.wall_time,
        "cpu_time": cpu,
        "fractions": trace.transition_fractions(),
        "curve": {
            "grad_evals": grads[keep].tolist(),
            "autocorr": [_finite(r) for r in rho[keep]],
        },
    }


def ratios(rows: list[dict]) -> list[dict]:
    """Per target and β: HMC ÷ LAHMC gradients to 0.5, and LAHMC ÷ HMC wall time to 0.5."""
    out = []
    index = {(r["target"], r["sampler"], r["beta"]): r for r in rows}
    for target_name, beta in dict.fromkeys((r["target"], r["beta"]) for r in rows):
        h = index.get((target_name, "HMC", beta))
        la = index.get((target_name, "LAHMC", beta))
        if h is None or la is None:
            continue
        grads_ratio = wall_ratio = cpu_ratio = None
        if h["grads_to_half"] is not None and la["grads_to_half"] is not None:
            grads_ratio = h["grads_to_half"] / la["grads_to_half"]
            wall_ratio = la["wall_to_half"] / h["wall_to_half"]
            cpu_ratio = la["cpu_to_half"] / h["cpu_to_half"]
        authors = AUTHORS_RATIO.get((target_name, beta))
        out.append(
            {
                "target": target_name,
                "beta": beta,
                "grads_hmc_over_lahmc": grads_ratio,
                "authors_grads_hmc_over_lahmc": authors,
                "relative_diff_from_authors": (
                    None if grads_ratio is None else grads_ratio / authors - 1.0
                ),
                "wall_lahmc_over_hmc": wall_ratio,
                "cpu_lahmc_over_hmc": cpu_ratio,
            }
        )
    return out


def run_figure2(
    sizes: dict[str, tuple[int, int]],
    seed: int = 0,
    progress: bool = False,
) -> dict:
    """Run figure 2 for the targets in ``sizes``: ``{target: (chains, steps)}``.

    Returns
    -------
    dict
        JSON-able: ``{"rows": [...], "ratios": [...], "seed", "threshold", "settings"}``;
        each row has ``target, sampler, beta, grads_to_half`` (``None`` if 0.5 is
        not reached within half the run), ``wall_to_half`` (seconds), the run's
        sizes and a down-sampled ``curve``.
    """
    rows = []
    for target_name, (chains, steps) in sizes.items():
        for beta in settings.BETAS:
            for sampler in settings.SAMPLERS:
                rows.append(
                    run_condition(target_name, sampler, beta, chains, steps, seed, progress)
                )
    return {
        "rows": rows,
        "ratios": ratios(rows),
        "seed": seed,
        "threshold": THRESHOLD,
        "settings": {
            "step_size": settings.STEP_SIZE,
            "n_leapfrog": settings.N_LEAPFROG,
            "look_ahead": settings.LOOK_AHEAD,
            "autocorrelation": "known zero mean, pooled over dimensions and chains "
            "(the authors' calc_corr), lags up to half the run",
            "init": "exact draws of the target (no burn-in)",
        },
    }


def _fmt(x: float | None, spec: str, missing: str = "not reached") -> str:
    """Format ``x`` with ``spec`` (a trailing "×" is kept as a suffix), or ``missing``."""
    if x is None:
        return missing
    return format(x, spec.rstrip("×")) + ("×" if spec.endswith("×") else "")


def figure2_markdown(result: dict) -> str:
    """Markdown: gradients and wall time to 0.5 per curve, and the HMC ÷ LAHMC ratios."""
    lines = [
        "Figure 2: gradient evaluations per chain until the autocorrelation first falls to 0.5.",
        "",
        "| Distribution | Sampler | β | chains × steps | gradients to 0.5 | wall time to 0.5 (s) "
        "| CPU time to 0.5 (s) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        lines.append(
            f"| {settings.TARGET_LABELS[r['target']]} | {r['sampler']} | {r['beta']:g} | "
            f"{r['chains']} × {r['steps']} | {_fmt(r['grads_to_half'], '.0f')} | "
            f"{_fmt(r['wall_to_half'], '.2f')} | {_fmt(r['cpu_to_half'], '.2f')} |"
        )
    lines += [
        "",
        "| Distribution | β | gradients to 0.5, HMC ÷ LAHMC | authors' code | difference "
        "| wall time to 0.5, LAHMC ÷ HMC | CPU time to 0.5, LAHMC ÷ HMC |",
        "|---|---|---|---|---|---|---|",
    ]
    for q in result["ratios"]:
        diff = q["relative_diff_from_authors"]
        lines.append(
            f"| {settings.TARGET_LABELS[q['target']]} | {q['beta']:g} | "
            f"{_fmt(q['grads_hmc_over_lahmc'], '.2f×', '—')} | "
            f"{q['authors_grads_hmc_over_lahmc']:.1f}× | "
            f"{'—' if diff is None else format(diff, '+.0%')} | "
            f"{_fmt(q['wall_lahmc_over_hmc'], '.2f×', '—')} | "
            f"{_fmt(q['cpu_lahmc_over_hmc'], '.2f×', '—')} |"
        )
    return "\n".join(lines) + "\n"
