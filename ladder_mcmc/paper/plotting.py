"""Plots of figures 2 and 3 (matplotlib, the optional ``plots`` extra; imported lazily)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ladder_mcmc.paper import settings

PLOTS_HINT = "PNG figures need matplotlib: pip install ladder_mcmc[plots]"

_STYLE = {
    ("HMC", 1.0): {"color": "tab:blue", "linestyle": "--", "label": "HMC, β = 1"},
    ("LAHMC", 1.0): {"color": "tab:blue", "linestyle": "-", "label": "LAHMC, β = 1"},
    ("HMC", 0.1): {"color": "tab:red", "linestyle": "--", "label": "persistent HMC, β = 0.1"},
    ("LAHMC", 0.1): {"color": "tab:red", "linestyle": "-", "label": "persistent LAHMC, β = 0.1"},
}


def have_matplotlib() -> bool:
    """True if matplotlib can be imported."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: Path) -> None:
    """Write to a temporary file beside ``path`` and move it into place."""
    tmp = path.with_name(path.name + ".tmp.png")
    fig.savefig(tmp, dpi=120)
    os.replace(tmp, path)


def plot_figure2(result: dict, out_dir: Path) -> list[Path]:
    """One PNG per target: autocorrelation against gradient evaluations, four curves."""
    plt = _pyplot()
    paths = []
    for target_name in dict.fromkeys(r["target"] for r in result["rows"]):
        rows = [r for r in result["rows"] if r["target"] == target_name]
        fig, ax = plt.subplots(figsize=(6.4, 4.4))
        for r in rows:
            g = np.asarray(r["curve"]["grad_evals"], dtype=float)
            rho = np.array([np.nan if v is None else v for v in r["curve"]["autocorr"]])
            style = dict(_STYLE[(r["sampler"], r["beta"])])
            half = r["grads_to_half"]
            style["label"] += (
                f"  (0.5 at {half:,.0f})" if half is not None else "  (0.5 not reached)"
            )
            ax.plot(g[1:], rho[1:], lw=1.6, **style)
            if half is not None:
                ax.plot([half], [0.5], "o", color=style["color"], ms=4)
        ax.axhline(0.5, color="0.5", lw=0.8, ls=":")
        ax.set_xscale("log")
        ax.set_ylim(-0.1, 1.02)
        ax.set_xlabel("gradient evaluations per chain (log scale)")
        ax.set_ylabel("autocorrelation")
        r0 = rows[0]
        ax.set_title(
            f"{settings.TARGET_LABELS[target_name]}: ε = {settings.STEP_SIZE:g}, "
            f"M = {settings.N_LEAPFROG}, K = {settings.LOOK_AHEAD}\n"
            f"{r0['chains']} chains × {r0['steps']:,} steps, chains started at exact draws",
            fontsize=10,
        )
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8, loc="lower left")
        fig.tight_layout()
        path = Path(out_dir) / f"figure2_{target_name}.png"
        _save(fig, path)
        plt.close(fig)
        paths.append(path)
    return paths


def plot_figure3(result: dict, out_dir: Path) -> Path:
    """The four heatmaps in one PNG; colour = log₁₀ gradients to 0.5, shared per pair."""
    plt = _pyplot()
    from matplotlib.colors import LogNorm

    eps = np.asarray(result["grid"]["step_size"])
    fig, axes = plt.subplots(2, 2, figsize=(10.5, 9), layout="constrained")
    panels = [
        ("eps_beta", "β (M = 10)", result["grid"]["beta"], "a", "b"),
        ("eps_m", "M (β = 1)", result["grid"]["n_leapfrog"], "c", "d"),
    ]
    for row, (panel, ylabel, yvals, la_letter, h_letter) in enumerate(panels):
        mats = {
            s: np.array([[np.nan if v is None else v for v in r] for r in result[panel][s]])
            for s in settings.SAMPLERS
        }
        finite = np.concatenate([m[np.isfinite(m)] for m in mats.values()])
        if finite.size:
            norm = LogNorm(vmin=finite.min(), vmax=finite.max())
        else:
            norm = LogNorm(vmin=1, vmax=10)
        image = None
        for col, (sampler, letter) in enumerate((("LAHMC", la_letter), ("HMC", h_letter))):
            ax = axes[row, col]
            m = mats[sampler]
            ax.set_facecolor("0.85")
            image = ax.imshow(
                np.ma.masked_invalid(m), origin="lower", aspect="auto", cmap="viridis", norm=norm
            )
            for i, j in np.ndindex(m.shape):
                v = m[i, j]
                if not np.isfinite(v):
                    ax.text(j, i, "×", ha="center", va="center", color="0.3", fontsize=11)
                    continue
                dark = norm(v) < 0.6
                ax.text(
                    j,
                    i,
                    f"{v:,.0f}",
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="white" if dark else "black",
                )
            ax.set_xticks(range(len(eps)))
            ax.set_xticklabels([f"{e:g}" for e in eps], fontsize=8)
            ax.set_yticks(range(len(yvals)))
            ax.set_yticklabels([f"{v:g}" for v in yvals], fontsize=8)
            ax.set_xlabel("step size ε")
            if col == 0:
                ax.set_ylabel(ylabel)
            ax.set_title(f"({letter}) {sampler}", fontsize=10)
        cbar = fig.colorbar(image, ax=list(axes[row]), shrink=0.9)
        cbar.set_label("gradient evaluations to autocorrelation 0.5")
    frac = result["lahmc_le_hmc_fraction"]
    frac_text = "n/a" if frac is None else f"{frac:.0%}"
    fig.suptitle(
        f"2-d Gaussian, covariance eigenvalues 1 and 10⁵; {result['chains']} chains, "
        f"{result['grad_budget_per_chain']:,} gradients per chain per cell; × = 0.5 not reached\n"
        f"LAHMC ≤ HMC in {frac_text} of the {result['cells_compared']} cells where both reach 0.5",
        fontsize=10,
    )
    path = Path(out_dir) / "figure3.png"
    _save(fig, path)
    plt.close(fig)
    return path
