"""What per-chain random streams cost: the same run with one shared generator, side by side.

Every chain draws from its own stream (``ladder_mcmc.engine.streams``), so that the
draws do not depend on the schedule, on checkpoints, on an executor's groups or on the
backend. This script times ``sample`` on the host loop with those streams against the
same loop fed by one shared ``numpy.random.Generator`` (each draw one call for the whole
batch, no per-chain bookkeeping) and prints the ratio of the wall times per gradient.
Kernels: ``lahmc`` (K = 4), ``hmc`` (K = 1) and a step-jittered ``lahmc``; targets: the
paper's 2-d and 100-d Gaussians; 4 and 100 chains. Methods alternate within each round,
the best of the rounds is kept.

Run::

    python benchmarks/streams.py                 # about two minutes
    python benchmarks/streams.py --rounds 5 --steps 2000
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import time

import numpy as np

try:
    import ladder_mcmc
except ImportError:  # run from a checkout without installing
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))
    import ladder_mcmc
from ladder_mcmc import hmc, lahmc, sample
from ladder_mcmc.engine import ChainStreams
from ladder_mcmc.models import IllConditionedGaussian


class SharedKind:
    """One kind of draw from the shared generator: every call one call for the batch."""

    def __init__(self, draw, n_chains: int) -> None:
        self._draw, self._n = draw, n_chains

    def take(self, ids, k, advance):
        n = self._n if ids is None else len(ids)
        return self._draw(n if k == 1 else (n, k))


class SharedGenerator(ChainStreams):
    """One generator for the whole batch, behind the streams' interface (the old cost)."""

    def __init__(self, seed: int, n_chains: int) -> None:
        self._rng = np.random.default_rng(seed)
        self._n = n_chains
        self.uniforms = SharedKind(self._rng.random, n_chains)
        self.normals = SharedKind(self._rng.standard_normal, n_chains)

    @property
    def n_chains(self) -> int:
        return self._n

    def view(self, ids=None, advance=None):
        return self._rng


def seconds_per_gradient(kernel, x0, steps, streams) -> float:
    start = time.perf_counter()
    trace = sample(kernel, x0, steps, seed=streams, warmup=0, checks=False, backend="numpy")
    elapsed = time.perf_counter() - start
    return elapsed / trace.grad_evals.sum()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=1000)
    args = parser.parse_args(argv)
    print(
        f"# {datetime.date.today()}  ladder_mcmc {ladder_mcmc.__version__}  numpy "
        f"{np.__version__}  python {platform.python_version()}  {os.cpu_count()} cores"
    )
    print(f"# {args.rounds} rounds of {args.steps} steps; µs per chain-gradient (best round)")
    print(f"{'target':>8} {'chains':>6} {'kernel':>16} {'shared':>9} {'per-chain':>9} {'ratio':>6}")
    kernels = {
        "lahmc": lambda t: lahmc(t, 1.0, 10, 0.1, look_ahead=4),
        "hmc": lambda t: hmc(t, 1.0, 10, 0.1),
        "lahmc jittered": lambda t: lahmc(t, 1.0, 10, 0.1, look_ahead=4, jitter=0.2),
    }
    ratios = []
    for dim in (2, 100):
        target = IllConditionedGaussian(dim)
        for chains in (4, 100):
            x0 = target.sample(chains, np.random.default_rng(0))
            for name, make in kernels.items():
                kernel = make(target)
                best = {"shared": np.inf, "per-chain": np.inf}
                for r in range(args.rounds):
                    order = ["shared", "per-chain"] if r % 2 == 0 else ["per-chain", "shared"]
                    for method in order:
                        streams = (
                            SharedGenerator(r, chains)
                            if method == "shared"
                            else ChainStreams.for_chains(r, chains)
                        )
                        t = seconds_per_gradient(kernel, x0, args.steps, streams)
                        best[method] = min(best[method], t)
                ratio = best["per-chain"] / best["shared"]
                ratios.append(ratio)
                print(
                    f"{dim:>8} {chains:>6} {name:>16} {1e6 * best['shared']:>9.3f} "
                    f"{1e6 * best['per-chain']:>9.3f} {ratio:>6.2f}"
                )
    print(f"# ratio per-chain / shared: median {np.median(ratios):.2f}, max {max(ratios):.2f}")


if __name__ == "__main__":
    main()
