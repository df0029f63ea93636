"""Peak memory of a long run with the draws streamed to disk (issue 7, "traces that fit").

Runs LAHMC (ε = 1, M = 10, β = 0.1, K = 4) on the 100-d ill-conditioned Gaussian
with 100 chains for 10⁵ steps — the paper's full size — with
``sample(..., draws_file=...)``, and prints the peak resident memory of the
process (``getrusage``; run it under ``/usr/bin/time -v`` for a second opinion),
the size of the draws file and of the per-step statistics kept in memory.

Run::

    nice -n 10 /usr/bin/time -v python benchmarks/memory.py --out /tmp/draws.npy
    python benchmarks/memory.py --steps 2000          # a quick look

The draws file (8 GB at full size) is deleted at the end unless ``--keep``.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time

import numpy as np

try:
    import ladder_mcmc
except ImportError:  # run from a checkout without installing
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))
    import ladder_mcmc
from ladder_mcmc import lahmc, sample
from ladder_mcmc.models import IllConditionedGaussian


def peak_rss_mib() -> float:
    """Peak resident set size of this process so far, MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dim", type=int, default=100)
    parser.add_argument("--chains", type=int, default=100)
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--thin", type=int, default=1)
    parser.add_argument("--out", default="draws.npy", help="draws file (must not exist)")
    parser.add_argument("--keep", action="store_true", help="keep the draws file")
    args = parser.parse_args(argv)

    target = IllConditionedGaussian(args.dim)
    kernel = lahmc(target, 1.0, 10, 0.1, look_ahead=4)
    x0 = target.sample(args.chains, np.random.default_rng(0))
    print(f"ladder_mcmc {ladder_mcmc.__version__}, numpy {np.__version__}")
    print(
        f"LAHMC on IllConditionedGaussian({args.dim}), {args.chains} chains, "
        f"{args.steps} steps, thin={args.thin}, draws to {args.out}"
    )
    print(f"peak RSS before sampling : {peak_rss_mib():9.1f} MiB")
    start = time.perf_counter()
    trace = sample(
        kernel, x0, args.steps, seed=1, thin=args.thin, draws_file=args.out, warmup=0, checks=False
    )
    wall = time.perf_counter() - start
    print(f"peak RSS after sampling  : {peak_rss_mib():9.1f} MiB")
    stats = trace.rungs.nbytes + trace.n_moves.nbytes + trace.non_finite_rungs.nbytes
    print(f"wall time                : {wall:9.1f} s")
    print(f"draws file               : {os.path.getsize(args.out) / 2**20:9.1f} MiB")
    print(
        f"per-step statistics      : {stats / 2**20:9.1f} MiB "
        f"(rungs {trace.rungs.dtype}, n_moves {trace.n_moves.dtype}, "
        f"non_finite {trace.non_finite_rungs.dtype}, each {trace.rungs.shape})"
    )
    print(f"transition fractions     : {trace.transition_fractions()}")
    print(f"gradient evaluations     : {int(trace.grad_evals.sum())}")
    last = np.asarray(trace.positions[-1])
    print(f"last draw finite         : {bool(np.isfinite(last).all())}")
    print(f"peak RSS at the end      : {peak_rss_mib():9.1f} MiB")
    del trace
    if not args.keep:
        os.remove(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
