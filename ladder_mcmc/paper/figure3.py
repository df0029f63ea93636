"""Figure 3 of the paper: gradient evaluations to autocorrelation 0.5 over hyperparameter grids.

Target: the 2-d Gaussian with covariance eigenvalues 1 and 10⁵
(``IllConditionedGaussian(2, log_condition=5)``). Two grids, each for LAHMC
(``K = 4``) and HMC: over step size ``ε`` and refresh ``β`` at ``M = 10``
(panels a, b), and over ``ε`` and leapfrog steps ``M`` at ``β = 1`` (panels c, d).

Every cell gets the same budget of gradient evaluations per chain (``steps``
sampling steps at ``M = 10``, i.e. ``10·steps`` gradients; ``10·steps/M`` steps
for other ``M``), and HMC and LAHMC in a cell start from the same exact draws
with the same seed (common random numbers). A cell whose autocorrelation does
not fall to 0.5 within half its run is "not reached".
"""

from __future__ import annotations

import math

import numpy as np

from ladder_mcmc.diagnostics.autocorrelation import autocorrelation_vs_grads, grads_to_threshold
from ladder_mcmc.models.exact_targets import IllConditionedGaussian
from ladder_mcmc.paper import settings

THRESHOLD = 0.5
LOG_CONDITION = 5.0
BUDGET_M = settings.N_LEAPFROG


def grid(size: int) -> dict[str, list[float]]:
    """The hyperparameter axes for a ``size × size`` grid.

    ``ε`` linear in ``[0.2, 1.8]`` (leapfrog is unstable for ``ε ≥ 2`` in the
    stiff direction, whose standard deviation is 1); ``β`` log-spaced in
    ``[0.01, 1]``; ``M`` roughly log-spaced integers in ``[2, 50]``. Odd sizes put
    the paper's ``ε = 1``, ``β = 0.1`` and ``M = 10`` on the grid.
    """
    eps = np.round(np.linspace(0.2, 1.8, size), 3)
    beta = np.round(np.logspace(-2, 0, size), 4)
    m = np.unique(np.round(np.geomspace(2, 50, size)).astype(int))
    return {"step_size": eps.tolist(), "beta": beta.tolist(), "n_leapfrog": m.tolist()}


def _cell(
    target, sampler, eps, m, beta, chains, steps_at_10, seed, key, progress
) -> tuple[float, float]:
    steps = max(4, int(round(steps_at_10 * BUDGET_M / m)))
    kern = settings.kernel(sampler, target, beta, step_size=eps, n_leapfrog=m)
    thin = max(1, steps // 1000)
    trace = settings.run(kern, target, chains, steps, seed, key, thin=thin, progress=False)
    grads, rho = autocorrelation_vs_grads(trace, max_lag=steps // 2, mean=0.0)
    return grads_to_threshold(grads, rho, THRESHOLD), trace.wall_time


def run_figure3(
    chains: int, steps: int, size: int = 5, seed: int = 0, progress: bool = False
) -> dict:
    """Run both grids for both samplers.

    Parameters
    ----------
    chains : int
        Chains per cell.
    steps : int
        Sampling steps per cell at ``M = 10`` (the gradient budget is ``10·steps``
        per chain in every cell).
    size : int
        Grid points per axis.

    Returns
    -------
    dict
        JSON-able: ``{"target", "grid", "eps_beta": {"LAHMC": [[…]], "HMC": [[…]]},
        "eps_m": {…}, "lahmc_le_hmc_fraction", "cells_compared", …}``; matrices
        are indexed ``[row][column]`` = ``[β or M index][ε index]``, ``None`` =
        not reached.
    """
    from ladder_mcmc.run.progress import Progress

    target = IllConditionedGaussian(2, log_condition=LOG_CONDITION)
    axes = grid(size)
    eps, betas, ms = axes["step_size"], axes["beta"], axes["n_leapfrog"]
    panels = {
        "eps_beta": [(b, settings.N_LEAPFROG, e) for b in betas for e in eps],
        "eps_m": [(1.0, m, e) for m in ms for e in eps],
    }
    shapes = {"eps_beta": (len(betas), len(eps)), "eps_m": (len(ms), len(eps))}
    total = sum(len(v) for v in panels.values()) * 2
    bar = Progress(total, "figure3", enabled=progress, unit="cell")
    done = 0
    out: dict = {}
    wall: dict = {}
    for panel, cells in panels.items():
        out[panel] = {s: np.full(shapes[panel], np.inf) for s in settings.SAMPLERS}
        wall[panel] = {s: 0.0 for s in settings.SAMPLERS}
        for idx, (beta, m, e) in enumerate(cells):
            i, j = divmod(idx, shapes[panel][1])
            for sampler in settings.SAMPLERS:
                key = ("figure3", panel, i, j)
                g, w = _cell(target, sampler, e, m, beta, chains, steps, seed, key, progress)
                out[panel][sampler][i, j] = g
                wall[panel][sampler] += w
                done += 1
                bar.update(done)
    bar.close()
    both = []
    for panel in panels:
        la, h = out[panel]["LAHMC"], out[panel]["HMC"]
        ok = np.isfinite(la) & np.isfinite(h)
        both.append(la[ok] <= h[ok])
    le = np.concatenate(both)
    only_lahmc = sum(
        int((np.isfinite(out[p]["LAHMC"]) & ~np.isfinite(out[p]["HMC"])).sum()) for p in panels
    )
    only_hmc = sum(
        int((~np.isfinite(out[p]["LAHMC"]) & np.isfinite(out[p]["HMC"])).sum()) for p in panels
    )
    ratio = np.concatenate(
        [
            out[p]["HMC"][ok] / out[p]["LAHMC"][ok]
            for p in panels
            for ok in [np.isfinite(out[p]["HMC"]) & np.isfinite(out[p]["LAHMC"])]
        ]
    )

    def js(a: np.ndarray) -> list:
        return [[float(v) if math.isfinite(v) else None for v in row] for row in a]

    return {
        "target": f"IllConditionedGaussian(2, log_condition={LOG_CONDITION:g})",
        "grid": axes,
        "eps_beta": {s: js(out["eps_beta"][s]) for s in settings.SAMPLERS},
        "eps_m": {s: js(out["eps_m"][s]) for s in settings.SAMPLERS},
        "fixed": {"eps_beta": {"n_leapfrog": settings.N_LEAPFROG}, "eps_m": {"beta": 1.0}},
        "lahmc_le_hmc_fraction": float(le.mean()) if le.size else None,
        "cells_compared": int(le.size),
        "cells_only_lahmc_reached": only_lahmc,
        "cells_only_hmc_reached": only_hmc,
        "median_hmc_over_lahmc": float(np.median(ratio)) if ratio.size else None,
        "chains": chains,
        "steps_at_m10": steps,
        "grad_budget_per_chain": steps * BUDGET_M,
        "seed": seed,
        "wall_time": {p: wall[p] for p in panels},
        "threshold": THRESHOLD,
    }


def figure3_markdown(result: dict) -> str:
    """Markdown: the four grids as tables (gradients to 0.5; ``—`` = not reached)."""

    def table(panel: str, sampler: str, row_name: str, rows: list) -> list[str]:
        eps = result["grid"]["step_size"]
        head = f"| {row_name} \\ ε | " + " | ".join(f"{e:g}" for e in eps) + " |"
        lines = [f"**{sampler}**", "", head, "|" + "---|" * (len(eps) + 1)]
        for r, vals in zip(rows, result[panel][sampler], strict=True):
            cells = ["—" if v is None else f"{v:.0f}" for v in vals]
            lines.append(f"| {r:g} | " + " | ".join(cells) + " |")
        return lines + [""]

    frac = result["lahmc_le_hmc_fraction"]
    lines = [
        f"Figure 3: gradient evaluations per chain to autocorrelation 0.5, {result['target']}; "
        f"{result['chains']} chains per cell, budget {result['grad_budget_per_chain']} gradient "
        f"evaluations per chain, seed {result['seed']}. — = not reached within half the run.",
        "",
        "(a, b) over ε and β at M = 10:",
        "",
    ]
    for s in ("LAHMC", "HMC"):
        lines += table("eps_beta", s, "β", result["grid"]["beta"])
    lines += ["(c, d) over ε and M at β = 1:", ""]
    for s in ("LAHMC", "HMC"):
        lines += table("eps_m", s, "M", result["grid"]["n_leapfrog"])
    median = result["median_hmc_over_lahmc"]
    lines.append(
        f"LAHMC needs no more gradient evaluations than HMC in "
        f"{'n/a' if frac is None else format(frac, '.0%')} of the {result['cells_compared']} cells "
        f"where both reach 0.5 (median HMC ÷ LAHMC there: "
        f"{'n/a' if median is None else format(median, '.2f')}); "
        f"only LAHMC reaches 0.5 in {result['cells_only_lahmc_reached']} cells, only HMC in "
        f"{result['cells_only_hmc_reached']}."
    )
    return "\n".join(lines) + "\n"
