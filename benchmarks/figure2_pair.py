"""Wall time to autocorrelation 0.5, LAHMC ÷ HMC, on the 2-d Gaussian at β = 1, in pairs.

The closest row of issue 7's "below 1 on all 12 rows of Table 1": LAHMC needs 1.36×
fewer gradients there, so the ratio is decided by the cost per gradient. This runs
HMC and LAHMC (ε = 1, M = 10, K = 4, β = 1; 1000 chains, ``thin=10``, as
``figure2 --full``) in alternating pairs of shorter runs and multiplies each one's
wall time per gradient by its gradients to 0.5 from ``docs/figures/figure2.md``
(seeded, hence exact)::

    python benchmarks/figure2_pair.py            # about two minutes
    python benchmarks/figure2_pair.py --pairs 8 --steps 2000
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from ladder_mcmc import hmc, lahmc, sample
from ladder_mcmc.models import IllConditionedGaussian

#: gradients per chain until the autocorrelation falls to 0.5 (docs/figures/figure2.md)
GRADIENTS_TO_HALF = {"hmc": 147192, "lahmc": 107853}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, default=4)
    parser.add_argument("--steps", type=int, default=4000)
    parser.add_argument("--chains", type=int, default=1000)
    args = parser.parse_args(argv)
    target = IllConditionedGaussian(2)
    x0 = target.sample(args.chains, np.random.default_rng(0))
    kernels = {"hmc": hmc(target, 1.0, 10, 1.0), "lahmc": lahmc(target, 1.0, 10, 1.0, 4)}
    per_gradient: dict[str, list[float]] = {"hmc": [], "lahmc": []}
    for r in range(args.pairs):
        for name in ("hmc", "lahmc") if r % 2 == 0 else ("lahmc", "hmc"):
            start = time.perf_counter()
            trace = sample(
                kernels[name],
                x0,
                args.steps,
                seed=r,
                thin=10,
                progress=False,
                warmup=0,
                checks=False,
            )
            per_gradient[name].append((time.perf_counter() - start) / trace.grad_evals.sum())
    pairs = list(zip(per_gradient["hmc"], per_gradient["lahmc"], strict=True))
    cost = [la / h for h, la in pairs]
    to_half = [c * GRADIENTS_TO_HALF["lahmc"] / GRADIENTS_TO_HALF["hmc"] for c in cost]
    print("wall time per gradient, LAHMC ÷ HMC :", " ".join(f"{c:.3f}" for c in cost))
    print("wall time to 0.5, LAHMC ÷ HMC       :", " ".join(f"{x:.3f}" for x in to_half))


if __name__ == "__main__":
    main()
