"""The code blocks of docs/tutorials/custom-rule.md and custom-map.md run, and their checks fail
when they should.

The blocks are executed as written (custom-rule.md first: custom-map.md uses its
``DoubleJumpRule``), so the documentation cannot drift from working code.
"""

from __future__ import annotations

import re
from pathlib import Path

import attrs
import numpy as np
import pytest

from ladder_mcmc import Ladder
from ladder_mcmc.models import IllConditionedGaussian
from ladder_mcmc.verify import FiniteLadder, assert_exact, assert_map, assert_one_step_invariance

DOCS = Path(__file__).resolve().parents[3] / "docs" / "tutorials"


def blocks(name: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", (DOCS / name).read_text(), flags=re.S)


def run_blocks(name: str, namespace: dict) -> dict:
    for code in blocks(name):
        exec(compile(code, str(DOCS / name), "exec"), namespace)
    return namespace


@pytest.fixture(scope="module")
def topologies() -> dict:
    return run_blocks("custom-rule.md", {"__name__": "doc_topologies"})


def test_topologies_doc_rule_passes_the_exact_checks(topologies):
    assert len(blocks("custom-rule.md")) == 1
    topologies["test_double_jump_rule_is_exact"]()  # the Hypothesis test defined in the doc


@pytest.fixture(scope="module")
def custom_map_page(topologies) -> dict:
    """The namespace of ``custom-map.md`` run once (assert_map, invariance, sample, the
    suite, a state-dependent step, ThreeStage); the tests below read its classes."""
    return run_blocks("custom-map.md", dict(topologies))


def test_custom_maps_doc_runs(custom_map_page):
    # FreeFlight, its use on both loops, the benchmark suite, a state-dependent step
    # (docs/design.md §14), ThreeStage splitting
    assert len(blocks("custom-map.md")) == 6
    assert custom_map_page["trace"].positions.shape == (100, 10, 2)


def test_the_toolkit_rejects_a_wrong_rule(topologies):
    """The doc's rule accepting twice as often as Metropolis allows fails the exact checks."""

    @attrs.frozen
    class OverEagerRule(topologies["DoubleJumpRule"]):
        def update(self, memory, stage, ratio):
            return memory, np.where(stage == 0, 0, np.minimum(1, 2 * ratio))

    with pytest.raises(AssertionError):
        assert_exact(Ladder(FiniteLadder([1, 2, 0], [1, 2, 4]), OverEagerRule()))


def test_the_toolkit_rejects_a_map_that_is_not_volume_preserving(custom_map_page):
    ns = custom_map_page
    xv = ns["XV"]

    @attrs.frozen(eq=False)
    class Squash(ns["FreeFlight"]):
        def forward(self, state):  # x ← 0.9 x + ε v: contracts volume
            return xv(0.9 * state.x + self.step_size * state.v, state.v)

    target = IllConditionedGaussian(2, log_condition=1)
    rng = np.random.default_rng(0)
    squash = Squash(target, step_size=0.5)
    with pytest.raises(AssertionError):
        assert_map(squash, squash.prepare(target.sample(8, rng), rng), rng)


def test_the_toolkit_rejects_a_state_dependent_law_left_out_of_the_density(custom_map_page):
    """The doc's free flight with a step drawn given ``x`` (docs/design.md §14): with
    ``p(α | x)`` dropped from the log density, the doc's one-step check fails."""
    ns = custom_map_page

    @attrs.frozen(eq=False)
    class DensityWithoutLaw(ns["AuxiliaryMap"]):
        def log_density(self, state):
            return self.family.log_density(state.inner)

    kernel = ns["LookAhead"](
        DensityWithoutLaw(ns["FlightFamily"](ns["target"]), ns["law"]), 3, ns["refresh"]
    )
    with pytest.raises(AssertionError, match="one step changed the distribution"):
        assert_one_step_invariance(kernel, ns["target"].sample, n_chains=20_000, seed=1)


def test_the_doc_exact_check_rejects_the_redraw_before_the_refresh_of_zeta(custom_map_page):
    from mutants import HiddenOrderRefresh

    ns = custom_map_page
    ladder, law = ns["ladder"], ns["ladder"].law
    inner = ns["InnerRefresh"](ns["InnerResample"](ladder.family.weights))
    hidden = HiddenOrderRefresh((ns["AuxiliaryRefresh"](law), inner))
    with pytest.raises(AssertionError, match="full step"):
        assert_exact(Ladder(ladder.map, ns["LookAheadRule"](3), hidden), ladder)
