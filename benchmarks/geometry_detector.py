"""Issue 30, aim 3: what the default's warm-up sees on each suite model (a prototype).

A detector that would switch ``sample(target)`` from ``lahmc`` to ``span_lahmc`` must fire
on the hard models (funnel, centred eight schools, rough well) and never on the others,
since ``span_lahmc`` costs several times ``lahmc``'s gradients per effective draw there.
This script runs the default kernel as the suite does (``lahmc(target)``, its JAX target
on the compiled loop, 4 chains × (1000 warm-up + ``--draws``), the suite's initial
points and seeds) and prints, per model and seed, what warm-up and the first draws show:

* ``eps``: the adapted step; ``first``: the first-rung fraction of warm-up's last
  quarter; ``flips``: its flip fraction; ``relocated``: chains moved for being idle;
* ``nonfinite``: the fraction of the first draws' rungs that met a non-finite energy
  (divergences);
* ``spread``: the **local step spread**: at each draw, ``s = log₂(ε ‖∇E(x)‖_{M⁻¹} / √d)``
  (the adapted ``ε`` and mass; ``span_lahmc``'s level centre with ``c = 1``); its 5–95 %
  range over all draws, and ``chain_spread``, the median over chains of the same range
  within a chain (how many doublings the step that suits the draw changes along a chain);
* ``span_share``: the share of draws whose ``s`` is above 1 or below −3, where
  ``span_lahmc`` would refine or lengthen by at least one level from its centre;
* ``rho``: the largest over coordinates of ``|Spearman ρ(s, x_i)|``, pooled draws: a
  scale that moves with one coordinate (a funnel's ``v``, a hierarchical ``log τ``)
  rather than with the distance from the mode (a Gaussian's, ``ρ ≈ 0`` by symmetry).

One JSON line per run.

    python benchmarks/geometry_detector.py --seeds 0 1
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
import zlib

import numpy as np
from scipy.stats import spearmanr

from ladder_mcmc import lahmc, sample
from ladder_mcmc.bench import SUITE, get_model


def _range(values: np.ndarray) -> float:
    lo, hi = np.quantile(values, [0.05, 0.95])
    return float(hi - lo)


def measure(name: str, seed: int, draws: int = 200, warmup: int = 1000) -> dict:
    """What the default's warm-up and first ``draws`` draws show on suite model ``name``."""
    model = get_model(name)
    target = model.target()
    seq = np.random.SeedSequence([seed, zlib.crc32(model.name.encode())])
    init_seed, run_seed, _ = seq.spawn(3)
    init = model.initial_points(target, 4, np.random.default_rng(init_seed))
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trace = sample(
            lahmc(model.jax_target(target)),
            init,
            draws,
            seed=run_seed,
            warmup=warmup,
            backend="jax",
            checks=False,
            progress=False,
        )
    warm = trace.warmup
    x = np.asarray(trace.positions, dtype=float)  # (draws, chains, dim)
    dim = x.shape[-1]
    grad = np.asarray(target.grad(x.reshape(-1, dim)), dtype=float)
    inv = warm.inverse_mass
    if inv is None:
        inv = np.ones(dim)
    quad = np.sum(grad * (grad * inv if np.ndim(inv) == 1 else grad @ inv), axis=1)
    with np.errstate(all="ignore"):
        s = np.log2(warm.step_size * np.sqrt(quad) / np.sqrt(dim)).reshape(x.shape[:2])
    s = np.where(np.isfinite(s), s, np.nan)
    finite = s[np.isfinite(s)]
    chain_spread = float(np.median([_range(c[np.isfinite(c)]) for c in s.T]))
    moves = max(int(np.sum(trace.n_moves)), 1)
    ok = np.isfinite(s).reshape(-1)
    ranks = spearmanr(s.reshape(-1)[ok], x.reshape(-1, dim)[ok]).statistic
    rho = np.abs(np.atleast_2d(ranks)[0, 1:]) if dim > 1 else np.abs(np.atleast_1d(ranks))
    return {
        "model": name,
        "seed": seed,
        "eps": round(float(warm.step_size), 4),
        "first": round(float(warm.first_stage_prob), 3),
        "flips": round(float(warm.flip_fraction), 3),
        "relocated": int(np.sum(warm.relocated)) if warm.relocated is not None else 0,
        "nonfinite": round(trace.non_finite / moves, 4),
        "spread": round(_range(finite), 2),
        "chain_spread": round(chain_spread, 2),
        "span_share": round(float(np.mean((finite > 1) | (finite < -3))), 3),
        "rho": round(float(np.nanmax(rho)), 3),
        "seconds": round(time.perf_counter() - start, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--models", nargs="+", default=list(SUITE))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--draws", type=int, default=200)
    args = parser.parse_args()
    for name in args.models:
        for seed in args.seeds:
            print(json.dumps(measure(name, seed, args.draws)), flush=True)


if __name__ == "__main__":
    main()
