"""``Leapfrog.integrate``: the public hook for other integrators (docs/tutorials/custom-map.md)."""

import re
from pathlib import Path

import attrs
import numpy as np
import pytest

from ladder_mcmc import LookAhead, MomentumRefresh, sample
from ladder_mcmc.hamiltonian import Leapfrog, McLachlan2, PhaseState, SymmetricSplitting, Yoshida4
from ladder_mcmc.models import IllConditionedGaussian
from ladder_mcmc.verify import assert_map

TARGET = IllConditionedGaussian(3, log_condition=2)


def _doc_three_stage() -> type:
    """The ``ThreeStage`` splitting of docs/tutorials/custom-map.md, run from the doc itself."""
    text = (
        Path(__file__).resolve().parents[3] / "docs" / "tutorials" / "custom-map.md"
    ).read_text()
    (code,) = [b for b in re.findall(r"```python\n(.*?)```", text, flags=re.S) if "ThreeStage" in b]
    namespace: dict = {"__name__": "doc_custom_maps"}
    exec(compile(code, "docs/tutorials/custom-map.md", "exec"), namespace)
    assert issubclass(namespace["ThreeStage"], SymmetricSplitting)
    return namespace["ThreeStage"]


ThreeStage = _doc_three_stage()


@attrs.frozen(eq=False)
class CountingLeapfrog(Leapfrog):
    """Leapfrog that counts the calls of its hook."""

    calls: list = attrs.field(factory=list)

    def integrate(self, x, v, grad):
        self.calls.append(x.shape)
        return super().integrate(x, v, grad)


def test_forward_and_move_go_through_integrate():
    rng = np.random.default_rng(0)
    lf = CountingLeapfrog(TARGET, 0.3, 4)
    state = lf.prepare(TARGET.sample(5, rng), rng)
    lf.forward(state)
    lf.move(state, np.array([1, -1, 1, -1, 1]))
    assert lf.calls == [(5, 3), (5, 3)]


@pytest.mark.parametrize("cls", [Leapfrog, Yoshida4, McLachlan2, ThreeStage])
def test_integrate_is_the_forward_map(cls):
    rng = np.random.default_rng(1)
    m = cls(TARGET, 0.2, 3)
    s = m.prepare(TARGET.sample(4, rng), rng)
    before = (s.x.copy(), s.v.copy(), s.grad.copy())
    out = m.integrate(s.x, s.v, s.grad)
    assert isinstance(out, PhaseState)
    fwd = m.forward(s)
    for field in ("x", "v", "energy", "grad"):
        np.testing.assert_array_equal(getattr(out, field), getattr(fwd, field))
    for arr, copy in zip((s.x, s.v, s.grad), before, strict=True):  # inputs not modified
        np.testing.assert_array_equal(arr, copy)


def test_a_new_splitting_is_a_valid_map_and_samples():
    rng = np.random.default_rng(2)
    three = ThreeStage(TARGET, 0.3, 4)
    assert three.cost == 12
    state = three.prepare(TARGET.sample(8, rng), rng)
    assert_map(three, state, rng)
    # three equal stages of a leapfrog step are three leapfrog steps of a third the size
    lf = Leapfrog(TARGET, 0.1, 12)
    a, b = three.forward(state), lf.forward(state)
    np.testing.assert_allclose(a.x, b.x, rtol=0, atol=1e-12)
    trace = sample(
        LookAhead(three, 2, MomentumRefresh(0.5)), TARGET.sample(4, rng), 5, seed=3, warmup=0
    )
    assert trace.positions.shape == (5, 4, 3)


def test_a_splitting_that_is_not_a_palindrome_is_refused():
    with pytest.raises(TypeError, match="palindromes"):

        class Lopsided(SymmetricSplitting):  # noqa: F841
            kicks = (0.4, 0.6)
            drifts = (1.0,)

    with pytest.raises(TypeError, match="m \\+ 1 kicks"):

        class Short(SymmetricSplitting):  # noqa: F841
            kicks = (0.5, 0.5)
            drifts = (0.5, 0.5)
