"""Neal's funnel: a step or a length drawn from the state against ``lahmc(target)``.

The funnel (``v ~ N(0, 9)``, ``x_i | v ~ N(0, e^v)``, 10 dimensions) has scales from
``e^{−3}`` in the neck to ``e^{3}`` in the mouth: a step small enough for the neck needs
hundreds of steps to cross the mouth. ``state_length_lahmc``
(:mod:`ladder_mcmc.hamiltonian.state_length`) keeps one small step ``ε`` and draws
each step's number of leapfrog steps from a law of the position: ``n`` uniform on
``{⌈N/2⌉ … N}``, ``N(x) = clip(round(τ e^{v/2} / ε), 1, N_max)``, short trajectories
in the neck, long ones in the mouth. The law is part of the density at every rung
(docs/design.md §14), so the chain keeps the funnel exactly.

``span_lahmc`` (:mod:`ladder_mcmc.hamiltonian.span_step`) draws a level from the size
of the gradient: ``M 2^ℓ`` steps of ``ε / 2^ℓ`` where the funnel narrows, ``M 2^{−ℓ}``
steps of ``ε`` where it widens, with ``ε`` and the mass adapted by warm-up.

``state_length_lahmc`` starts at exact draws, with no warm-up. ``lahmc(target)`` and
``span_lahmc`` start as the benchmark suite does (uniform on ``(−2, 2)``), and run their
default warm-up. Printed per kernel: gradients, the error of the mean and variance of
``v`` (exact 0 and 9) and the fraction of draws with ``v < −5`` (exact
``Φ(−5/3) = 0.048``), which measures how far into the neck the chains go. With
``--plot FILE`` (matplotlib): the draws of ``(x₁, v)`` of ``lahmc(target)`` and
``span_lahmc`` beside as many exact draws.

Run::

    python examples/funnel.py            # 4 chains × (1 000 warm-up + 2 000 steps)
    python examples/funnel.py --quick    # 4 chains × (100 + 100), a few seconds
    python examples/funnel.py --plot docs/figures/funnel_tails.png
"""

from __future__ import annotations

import argparse
import math
import sys
import warnings
from pathlib import Path

import numpy as np

try:
    import ladder_mcmc  # noqa: F401
except ImportError:  # run from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ladder_mcmc import lahmc, sample
from ladder_mcmc.hamiltonian import span_lahmc
from ladder_mcmc.hamiltonian.state_length import state_length_lahmc
from ladder_mcmc.models import NealsFunnel as Funnel


def report(label: str, trace) -> None:
    v = trace.positions[:, :, 0]
    grads = int(np.sum(trace.grad_evals))
    warm = getattr(trace.warmup, "grad_evals", None)
    if warm is not None:
        grads += int(np.sum(warm))
    exact = 0.5 * math.erfc(5 / 3 / math.sqrt(2))
    print(
        f"{label:<31} gradients {grads:>9}  mean(v) error {v.mean():+.3f}  "
        f"var(v) error {v.var() - 9.0:+.3f}  P(v < -5) {(v < -5).mean():.4f} "
        f"(exact {exact:.4f})"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="4 chains × (100 + 100) steps")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--plot", type=Path, help="write the figure here (needs matplotlib)")
    args = parser.parse_args(argv)
    chains, warmup, steps = (4, 100, 100) if args.quick else (4, 1000, 2000)
    target = Funnel(10)
    rng = np.random.default_rng(args.seed)
    exact_init = target.sample(chains, rng)
    suite_init = rng.uniform(-2.0, 2.0, size=(chains, target.dim))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the funnel's divergences and ESS warnings
        default = sample(lahmc(target), suite_init, steps, seed=args.seed, warmup=warmup)
        span = sample(
            span_lahmc(target, n_steps=8, beta=1.0), suite_init, steps, seed=args.seed,
            warmup=warmup,
        )  # fmt: skip
        kernel = state_length_lahmc(target, 0.05, time=1.5, max_steps=128, scale=target.local_scale)
        drawn = sample(kernel, exact_init, steps, seed=args.seed, warmup=0)
    print(
        f"Neal's funnel, 10-d, {chains} chains x ({warmup} warm-up + {steps} steps), seed "
        f"{args.seed} (exact: E v = 0, Var v = 9)"
    )
    report("lahmc(target)", default)
    report("span_lahmc(n_steps=8, beta=1)", span)
    report("state_length_lahmc, no warm-up", drawn)
    if args.plot:
        exact = target.sample(chains * steps, np.random.default_rng(args.seed + 1))
        plot({"lahmc(target)": default, "span_lahmc": span}, exact, args.plot)
        print(f"figure: {args.plot}")
    return 0


def plot(traces: dict, exact: np.ndarray, path: Path) -> None:
    """``(x₁, v)`` of each trace's draws beside as many exact draws, ``v = −5`` marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = {
        "exact draws": exact,
        **{k: t.positions.reshape(-1, exact.shape[1]) for k, t in traces.items()},
    }
    fig, axes = plt.subplots(1, len(panels), figsize=(4 * len(panels), 4), sharex=True, sharey=True,
                             constrained_layout=True)  # fmt: skip
    for ax, (name, x) in zip(axes, panels.items(), strict=True):
        ax.scatter(x[:, 1], x[:, 0], s=2, alpha=0.3, lw=0)
        ax.axhline(-5, color="grey", lw=0.7, ls="--")
        ax.set(xscale="symlog", xlabel="$x_1$ (symlog)", title=f"{name}: $v < -5$ in "
               f"{100 * np.mean(x[:, 0] < -5):.1f} %")  # fmt: skip
    axes[0].set_ylabel("$v$")
    axes[0].set_ylim(-11, 11)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    raise SystemExit(main())
