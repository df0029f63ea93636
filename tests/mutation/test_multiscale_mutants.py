"""The law dropped from the density (§14, mutant (c)) on the multiscale leapfrogs: caught.

``DroppedLawMap`` samples with ``log p(ζ)`` for the density, leaving out ``p(α | ζ)``:
balanced for ``p(ζ)`` at each fixed ``α``, not for ``p(ζ) p(α | ζ)``. One-step invariance
on the 3-d funnel, with the settings under which the correct kernels pass
(``tests/statistical/test_multiscale_funnel.py``), rejects it for the length drawn
from the position, for the refined step and for the level drawn from the gradient.
"""

from __future__ import annotations

import pytest
from multiscale_funnel import Funnel, length_kernel, refined_kernel, span_kernel
from mutants import DroppedLawMap

from ladder_mcmc.ladder import Ladder
from ladder_mcmc.verify import assert_one_step_invariance

FUNNEL = Funnel(3)


@pytest.mark.parametrize(
    ("build", "n_chains"),
    [(length_kernel, 20_000), (refined_kernel, 50_000), (lambda: span_kernel(0.7), 30_000)],
    ids=["length", "refined", "span"],
)
def test_one_step_invariance_catches_the_dropped_law(build, n_chains):
    kernel = build()
    mutant = Ladder(DroppedLawMap(kernel.map.family, kernel.map.law), kernel.rule, kernel.refresh)
    with pytest.raises(AssertionError, match="one step changed the distribution"):
        assert_one_step_invariance(mutant, FUNNEL.sample, n_chains=n_chains, seed=1)
