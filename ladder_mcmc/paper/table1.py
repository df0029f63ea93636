"""Table 1 of the paper: the fraction of steps that go to each rung (``F``, ``L1`` … ``L4``).

Twelve rows: three targets × {HMC, LAHMC} × ``β ∈ {1, 0.1}``, each with
batch-means standard errors (:func:`ladder_mcmc.diagnostics.rung_table.transition_table`)
beside the paper's values.
"""

from __future__ import annotations

from ladder_mcmc.diagnostics.rung_table import transition_table
from ladder_mcmc.paper import settings

COLUMNS = ("F", "L1", "L2", "L3", "L4")

# The paper's table 1 (HMC rows: L2..L4 are 0 by construction).
PAPER: dict[tuple[str, str, float], tuple[float, ...]] = {
    ("gauss2", "HMC", 1.0): (0.079, 0.921, 0, 0, 0),
    ("gauss2", "LAHMC", 1.0): (0.000, 0.921, 0.035, 0.044, 0.000),
    ("gauss2", "HMC", 0.1): (0.080, 0.920, 0, 0, 0),
    ("gauss2", "LAHMC", 0.1): (0.000, 0.921, 0.035, 0.044, 0.000),
    ("gauss100", "HMC", 1.0): (0.147, 0.853, 0, 0, 0),
    ("gauss100", "LAHMC", 1.0): (0.047, 0.852, 0.059, 0.035, 0.006),
    ("gauss100", "HMC", 0.1): (0.147, 0.853, 0, 0, 0),
    ("gauss100", "LAHMC", 0.1): (0.047, 0.852, 0.059, 0.035, 0.006),
    ("rough", "HMC", 1.0): (0.446, 0.554, 0, 0, 0),
    ("rough", "LAHMC", 1.0): (0.292, 0.554, 0.099, 0.036, 0.019),
    ("rough", "HMC", 0.1): (0.446, 0.554, 0, 0, 0),
    ("rough", "LAHMC", 0.1): (0.292, 0.554, 0.100, 0.036, 0.019),
}


def rows_order() -> list[tuple[str, str, float]]:
    """The paper's row order: target, then β = 1 before 0.1, HMC before LAHMC."""
    return [(t, s, b) for t in settings.TARGETS for b in settings.BETAS for s in settings.SAMPLERS]


def run_table1(chains: int, steps: int, seed: int = 0, progress: bool = False) -> dict:
    """Run the twelve conditions and tabulate their rung fractions.

    Parameters
    ----------
    chains, steps : int
        Per condition. The standard error of a fraction ``p`` is about
        ``sqrt(p(1-p) / (chains·steps))`` times a small factor for correlation
        between steps (the batch means estimate it).
    seed : int
        Master seed; every condition gets its own stream.
    progress : bool
        One progress line per condition on stderr.

    Returns
    -------
    dict
        JSON-able: ``{"rows": [{"target", "sampler", "beta", "fractions",
        "stderr", "paper", "max_abs_diff", "wall_time"}], "chains", "steps",
        "seed", "settings"}``.
    """
    rows = []
    for target_name, sampler, beta in rows_order():
        target = settings.TARGETS[target_name]()
        kern = settings.kernel(sampler, target, beta)
        settings.announce(f"table1: {target_name} {sampler} beta={beta:g}", progress)
        # Only the rung statistics are needed: keep a single draw per chain.
        trace = settings.run(
            kern,
            target,
            chains,
            steps,
            seed,
            ("table1", target_name, beta, sampler),
            thin=steps,
            progress=progress,
        )
        table = transition_table(trace)
        paper = dict(zip(COLUMNS, PAPER[(target_name, sampler, beta)], strict=True))
        fractions = {c: table["fractions"].get(c, 0.0) for c in COLUMNS}
        stderr = {c: table["stderr"].get(c, 0.0) for c in COLUMNS}
        rows.append(
            {
                "target": target_name,
                "sampler": sampler,
                "beta": beta,
                "fractions": fractions,
                "stderr": stderr,
                "paper": paper,
                "max_abs_diff": max(abs(fractions[c] - paper[c]) for c in COLUMNS),
                "wall_time": trace.wall_time,
            }
        )
    return {
        "rows": rows,
        "chains": chains,
        "steps": steps,
        "seed": seed,
        "settings": _settings(),
    }


def _settings() -> dict:
    return {
        "step_size": settings.STEP_SIZE,
        "n_leapfrog": settings.N_LEAPFROG,
        "look_ahead": settings.LOOK_AHEAD,
        "init": "exact draws of the target (no burn-in)",
    }


def table1_markdown(result: dict) -> str:
    """Markdown: per column, our fraction ± standard error, then the paper's value in brackets."""
    lines = [
        f"Table 1: fraction of steps to each rung, ours ± batch-means standard error "
        f"[paper] ({result['chains']} chains × {result['steps']} steps per row, "
        f"seed {result['seed']}).",
        "",
        "| Distribution | Sampler | " + " | ".join(COLUMNS) + " | max \\|ours − paper\\| |",
        "|" + "---|" * (3 + len(COLUMNS)),
    ]
    for row in result["rows"]:
        cells = [
            f"{row['fractions'][c]:.3f} ± {row['stderr'][c]:.3f} [{row['paper'][c]:.3f}]"
            for c in COLUMNS
        ]
        label = settings.TARGET_LABELS[row["target"]]
        lines.append(
            f"| {label} | {row['sampler']} β = {row['beta']:g} | "
            + " | ".join(cells)
            + f" | {row['max_abs_diff']:.3f} |"
        )
    worst = max(r["max_abs_diff"] for r in result["rows"])
    lines += ["", f"Largest difference from the paper over all 12 rows and 5 columns: {worst:.3f}."]
    return "\n".join(lines) + "\n"
