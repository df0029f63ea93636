"""The LookAhead kernel sampled on finite ladders agrees with its exact transition matrix.

Both schedules (``schedule="synchronous"`` and ``"ragged"``), one step and three
steps (``T³``: the ragged step interleaves chains at different steps), with
and without a direction refresh. Per entry an exact binomial test, Bonferroni
over the entries, total false-alarm rate 1e-6 per test case (fixed seeds, so
the outcome is deterministic); transitions of exact probability 0 must never
occur. 2 000 chains per extended state: a transition probability off by 0.05
is about 4.5 standard errors (sd ≤ √(0.25/2000) = 0.011) and is caught.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from ladder_mcmc import DirectionRefresh, LookAhead
from ladder_mcmc.verify import FiniteLadder, assert_transition_frequencies

LADDERS = {
    # construction (a): a 5-cycle and a 2-cycle, ties among the weights
    "permutation": FiniteLadder([1, 2, 3, 4, 0, 6, 5], [3, 1, 4, 1, 5, 2, 2]),
    # construction (b): L = F∘G, weights constant on F-orbits, flip derived
    "involutions": FiniteLadder.from_involutions(
        [1, 0, 3, 2, 4, 6, 5], [0, 2, 1, 4, 3, 5, 6], [2, 2, 5, 5, 1, 3, 3]
    ),
}


@pytest.mark.parametrize("schedule", ["synchronous", "ragged"])
@pytest.mark.parametrize("name", sorted(LADDERS))
@pytest.mark.parametrize(
    ("refresh", "n_steps"),
    [(None, 1), (DirectionRefresh(Fraction(1, 4)), 3)],
    ids=["1step", "3steps-refresh"],
)
def test_sampled_frequencies_match_exact_matrix(schedule, name, refresh, n_steps):
    kernel = LookAhead(LADDERS[name], max_rungs=3, refresh=refresh)
    counts = assert_transition_frequencies(
        kernel, n_per_state=2000, n_steps=n_steps, schedule=schedule, seed=11
    )
    assert counts.sum() == 2000 * 2 * LADDERS[name].n
    assert np.count_nonzero(counts) > 2 * LADDERS[name].n  # not a deterministic kernel
