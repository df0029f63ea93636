"""Mutation sensitivity of the suite's calibration on exact draws (docs/design.md §7.4):
two broken MCSEs of a standard deviation, each caught by the check that exact
draws of Neal's funnel pass the sd's z at the suite's sizes
(``tests/unit/bench/test_bench_sd_mcse.py``), which the correct code passes 40 of 40.

* ``own fourth moment``: the MCSE from the fourth moment of the draws judged (the
  verdict before 2026-11-28): exact draws fail on 7 of the 40 seeds;
* ``normal kurtosis``: the funnel's ``x_i`` taken for normal (kurtosis 3 instead of
  ``3 e^{s²}``): exact draws fail on every seed (40 of 40 measured).
"""

from __future__ import annotations

import zlib

import attrs
import numpy as np

from ladder_mcmc.bench import SUITE
from ladder_mcmc.bench import figures as figures_module
from ladder_mcmc.bench.figures import z_of_sds
from ladder_mcmc.diagnostics import posterior_statistics

CHAINS, DRAWS, SEEDS = 4, 2000, 40


def _exact_draws(seed: int) -> np.ndarray:
    """``benchmarks/hard_geometry.py --kernel exact``'s funnel draws of ``seed``."""
    model = SUITE["funnel"]
    seq = np.random.SeedSequence([seed, zlib.crc32(model.name.encode())])
    _, ours, _ = seq.spawn(3)
    draws = model.target().sample(DRAWS * CHAINS, np.random.default_rng(ours))
    return draws.reshape(DRAWS, CHAINS, -1)


def _seeds_failed(moments) -> list[int]:
    return [s for s in range(SEEDS) if z_of_sds(_exact_draws(s), moments).max() > 5]


def _moments():
    model = SUITE["funnel"]
    return model.moments(model.target())


def test_the_correct_mcse_passes_every_seed():
    assert _seeds_failed(_moments()) == []


def test_the_mcse_from_the_draws_own_fourth_moment_is_caught(monkeypatch):
    def own(quantities, moments, sd=None):  # the delta method on the draws' own fourth moment
        return posterior_statistics(np.asarray(quantities, dtype=float), ("mcse_sd",))["mcse_sd"]

    monkeypatch.setattr(figures_module, "mcse_sds", own)
    failed = _seeds_failed(_moments())
    assert len(failed) >= 3, failed  # 7 of 40 measured: seeds 5, 15, 24, 29, 31, 36, 39


def test_the_funnel_taken_for_normal_is_caught():
    moments = _moments()
    normal = attrs.evolve(moments, kurtosis=np.full(len(moments.names), 3.0))
    failed = _seeds_failed(normal)
    assert len(failed) >= 30, failed
