"""Lifted random walk on a cycle: mixing time against n, reversible walk vs persistent ladder.

The map is the shift ``i → i + 1 (mod n)`` (:class:`ladder_mcmc.ladder.cycle.CycleShift`)
with the uniform target. Two ladder kernels, both ``K = 1`` (every move is
accepted, the target being uniform):

* **reversible**: the direction is resampled every step (``DirectionRefresh(1)``):
  the simple random walk, ±1 with probability ½ each;
* **ladder** (lifted, Diaconis, Holmes & Neal 2000): the direction is resampled
  with probability ``1/n`` per step, so the chain sweeps round the cycle.

Mixing time, precisely: from the extended state ``(0, +1)`` (every start is
equivalent by the cycle's symmetry), the number of steps ``t`` until the total
variation distance between the law of ``(i_t, d_t)`` and the uniform law on the
``2n`` extended states first falls to ``1/4`` or below. The law is computed
exactly — by iterating the transition matrix that ``ladder_mcmc.verify.finite`` builds
from the kernel's own rule arithmetic (rational, then converted to floats for the
iteration) — not estimated. ``n`` is odd so that the ±1 walk is aperiodic. A
Monte Carlo run of the sampler itself is compared with the exact law at one ``n``.

Run::

    python examples/lifted_cycle.py            # n = 9 … 513
    python examples/lifted_cycle.py --quick    # n = 9 … 129, well under 2 minutes

The last line printed is ``slopes: reversible=<a> ladder=<b>`` (log-log slopes of
mixing time against n; theory: 2 and 1).
"""

from __future__ import annotations

import argparse
import sys
import time
from fractions import Fraction
from pathlib import Path

import numpy as np
from scipy import sparse

try:
    import ladder_mcmc  # noqa: F401
except ImportError:  # run from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ladder_mcmc import DirectionRefresh, Ladder, sample
from ladder_mcmc.ladder import CycleShift, LookAheadRule
from ladder_mcmc.verify import FiniteLadder, exact_transition_rows


def kernels(n: int) -> dict[str, Ladder]:
    """The two kernels on the n-cycle, on the finite-ladder form of the shift (exact matrices)."""
    shift = FiniteLadder([(i + 1) % n for i in range(n)], [1] * n)
    return {
        "reversible": Ladder(shift, LookAheadRule(1), DirectionRefresh(Fraction(1))),
        "ladder": Ladder(shift, LookAheadRule(1), DirectionRefresh(Fraction(1, n))),
    }


def float_matrix(kernel: Ladder) -> sparse.csr_matrix:
    """The exact transition matrix (rational) as a sparse float matrix."""
    rows = exact_transition_rows(kernel)
    r, c, v = [], [], []
    for k, row in enumerate(rows):
        for j, p in row.items():
            r.append(k)
            c.append(j)
            v.append(float(p))
    size = len(rows)
    return sparse.csr_matrix((v, (r, c)), shape=(size, size))


def tv_curve(kernel: Ladder, max_steps: int, threshold: float = 0.25) -> tuple[int, list[float]]:
    """Steps until TV(law of (i_t, d_t) from (0, +1), uniform) ≤ threshold; and the TV curve."""
    t_matrix = float_matrix(kernel).T.tocsr()  # act on column vectors: μ_{t+1} = Tᵀ μ_t
    size = t_matrix.shape[0]
    mu = np.zeros(size)
    mu[0] = 1.0
    uniform = 1.0 / size
    curve = []
    for t in range(1, max_steps + 1):
        mu = t_matrix @ mu
        tv = 0.5 * np.abs(mu - uniform).sum()
        curve.append(tv)
        if tv <= threshold:
            return t, curve
    raise RuntimeError(f"TV still {curve[-1]:.3f} after {max_steps} steps")


def monte_carlo_check(n: int, steps: int, chains: int, seed: int) -> tuple[float, float]:
    """Run the sampler on CycleShift(n) (lifted kernel) from (0, +1); TV of positions at ``steps``.

    Returns the empirical TV distance from uniform of the positions and the exact one.
    """
    kernel = Ladder(CycleShift(n), LookAheadRule(1), DirectionRefresh(1.0 / n))
    rng = np.random.default_rng(seed)
    ks = kernel.init(np.zeros(chains, dtype=np.int64), rng, direction=np.ones(chains, np.int8))
    trace = sample(kernel, ks, steps, seed=rng, schedule="synchronous")
    counts = np.bincount(trace.states[-1], minlength=n) / chains
    empirical = 0.5 * np.abs(counts - 1.0 / n).sum()
    # exact law of the position after ``steps`` (refresh prob 1/n in floats = the kernel above)
    t_matrix = float_matrix(kernels(n)["ladder"]).T.tocsr()
    mu = np.zeros(2 * n)
    mu[0] = 1.0
    for _ in range(steps):
        mu = t_matrix @ mu
    exact = 0.5 * np.abs(mu[:n] + mu[n:] - 1.0 / n).sum()
    return empirical, exact


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="n up to 129 (well under 2 minutes)")
    parser.add_argument("--plot", default="lifted_cycle.png", help="where to save the plot")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    ns = [9, 17, 33, 65, 129] if args.quick else [9, 17, 33, 65, 129, 257, 513]
    results: dict[str, list[int]] = {"reversible": [], "ladder": []}
    print(f"{'n':>5} {'t_mix reversible':>17} {'t_mix ladder':>13}")
    for n in ns:
        for name, kernel in kernels(n).items():
            t_mix, _ = tv_curve(kernel, max_steps=10 * n * n + 100)
            results[name].append(t_mix)
        print(f"{n:>5} {results['reversible'][-1]:>17} {results['ladder'][-1]:>13}")
    log_n = np.log(ns)
    slopes = {k: float(np.polyfit(log_n, np.log(v), 1)[0]) for k, v in results.items()}

    n_mc, chains = 33, 20_000
    t_mc = results["ladder"][ns.index(n_mc)]
    emp, exact = monte_carlo_check(n_mc, t_mc, chains, seed=1)
    se = np.sqrt(n_mc / chains) / 2  # rough scale of the empirical TV's noise floor
    print(
        f"sampler check, lifted n={n_mc}, t={t_mc}, {chains} chains: TV(positions, uniform) "
        f"empirical {emp:.4f} vs exact {exact:.4f} (noise floor ~{se:.3f})"
    )

    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: skipping the plot", file=sys.stderr)
    else:
        fig, ax = plt.subplots(figsize=(5, 4))
        for name, marker in (("reversible", "o"), ("ladder", "s")):
            ax.loglog(ns, results[name], marker=marker, label=f"{name} (slope {slopes[name]:.2f})")
        ax.set_xlabel("cycle length n")
        ax.set_ylabel("mixing time (steps to TV ≤ 1/4)")
        ax.set_title("Shift on a cycle: reversible walk vs lifted ladder")
        ax.legend()
        fig.tight_layout()
        path = Path(args.plot)
        fig.savefig(path, dpi=120)
        print(f"plot saved to {path}")
    print(f"({time.perf_counter() - start:.1f} s)")
    print(f"slopes: reversible={slopes['reversible']:.2f} ladder={slopes['ladder']:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
