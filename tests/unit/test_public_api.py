"""The front door: the package's public names, where they live, and what ``import`` loads.

* ``ladder_mcmc.__all__`` is a deliberate list: what a user reaches for (running chains,
  the samplers, the parts of a kernel of one's own, targets, what the draws say), not the
  kernels' internal states;
* every subpackage's ``__all__`` imports from it, and no name is exported twice under two
  different objects;
* the layout of an earlier draft (``ladder_mcmc.targets``, ``.rules``, …, the engine's
  ``ladder_mcmc.drivers``) does not exist, and nothing stands in for it;
* ``import ladder_mcmc`` imports none of the optional or test dependencies (JAX included:
  the engine's JAX loop imports it when a run takes the JAX backend).
"""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import ladder_mcmc

ROOT = Path(__file__).resolve().parents[2]

TOP_LEVEL = [
    "sample", "resume", "Warmup", "Checkpoint", "Parallel", "Trace", "apply_warmup",
    "hmc", "lahmc", "lifted_lahmc",
    "Ladder", "LookAhead", "ReversibleMap", "Rule", "LookAheadRule", "FLIP", "STAY",
    "Refresh", "ComposedRefresh", "DirectionRefresh", "Leapfrog", "PhaseState",
    "MomentumRefresh",
    "Target", "FunctionTarget", "from_jax", "from_pymc",
    "summary", "to_inference_data", "check_gradient", "SamplingWarning",
]  # fmt: skip

#: kernels' internal states and bookkeeping: reachable from their subpackage only
INTERNAL = ["LadderState", "StepInfo", "JitteredPhaseState", "JitteredLengthState",
            "LiftedPhaseState", "ChainStreams", "Recorder"]  # fmt: skip

SUBPACKAGES = ["ladder", "hamiltonian", "engine", "run", "diagnostics", "verify", "models",
               "bench", "hamiltonian.warmup", "models.posteriors"]  # fmt: skip

POSTERIOR_MODULES = [
    "ark", "arma", "blr", "comparison", "eight_schools", "garch", "gauss_mix", "kidiq",
    "posterior", "references", "transforms",
]  # fmt: skip


def test_the_top_level_is_the_deliberate_list():
    assert sorted(ladder_mcmc.__all__) == sorted(TOP_LEVEL)
    for name in TOP_LEVEL:
        namespace: dict = {}
        exec(f"from ladder_mcmc import {name}", namespace)
        assert namespace[name] is getattr(ladder_mcmc, name)


@pytest.mark.parametrize("name", INTERNAL)
def test_internal_states_are_not_at_the_top_level(name):
    assert not hasattr(ladder_mcmc, name)


@pytest.mark.parametrize("subpackage", SUBPACKAGES)
def test_every_subpackage_name_imports(subpackage):
    module = importlib.import_module(f"ladder_mcmc.{subpackage}")
    for name in module.__all__:
        assert hasattr(module, name), name
    top = {n: getattr(ladder_mcmc, n) for n in ladder_mcmc.__all__}
    # the top level's sample and resume also take a target
    for name in set(module.__all__) & set(top) - {"sample", "resume"}:
        assert getattr(module, name) is top[name], name


@pytest.mark.parametrize(
    "former",
    ["targets", "rules", "refresh", "metrics", "kinetic", "summary", "finite", "testing",
     "posteriors", "checkpoint", "drivers", "ragged_leapfrog", "former_paths"],
)  # fmt: skip
def test_no_module_of_an_earlier_layout(former):
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(f"ladder_mcmc.{former}")


def test_the_hmc_function_is_the_top_level_hmc():
    assert callable(ladder_mcmc.hmc) and ladder_mcmc.hmc.__name__ == "hmc"
    from ladder_mcmc.hamiltonian import hmc

    assert hmc is ladder_mcmc.hmc


@pytest.mark.parametrize("submodule", POSTERIOR_MODULES)
def test_posterior_submodules_import_from_their_home(submodule):
    module = importlib.import_module(f"ladder_mcmc.models.posteriors.{submodule}")
    assert module.__name__ == f"ladder_mcmc.models.posteriors.{submodule}"


def test_posteriors_load_from_their_home():
    from ladder_mcmc.models.posteriors import load, names
    from ladder_mcmc.models.posteriors.references import ENV_VAR

    assert ENV_VAR == "LADDER_MCMC_POSTERIORDB"
    assert len(names()) == 7
    assert load("kidiq-kidscore_momiq").dim == 3


def test_an_unknown_name_is_still_an_attribute_error():
    with pytest.raises(AttributeError):
        ladder_mcmc.no_such_module  # noqa: B018
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("ladder_mcmc.no_such_module")


def test_import_ladder_mcmc_imports_no_optional_dependency():
    heavy = ["hypothesis", "matplotlib", "arviz", "numba", "distributed", "pytest"]
    heavy += ["jax", "pymc", "pytensor", "torch"]  # the model adapters import them when called
    code = (
        "import sys, ladder_mcmc; "
        f"print([m for m in {heavy!r} if m in sys.modules]); "
        "print(sorted(m for m in sys.modules if m.startswith(('ladder_mcmc.verify', "
        "'ladder_mcmc.paper', 'ladder_mcmc.models.posteriors'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert out == ["[]", "[]"]


def test_sample_is_short_and_takes_at_most_ten_settings():
    """Four arguments, then at most ten settings; a body of at most ~80 lines (its
    settings come in groups: ``Warmup``, ``Checkpoint``, ``Parallel``)."""
    import ast
    import inspect

    from ladder_mcmc.run.sampling import sample

    params = inspect.signature(sample).parameters
    assert list(params)[:4] == ["kernel", "init", "n_steps", "seed"]
    assert len([p for p in params.values() if p.default is not inspect.Parameter.empty]) <= 10
    function = ast.parse(inspect.getsource(sample)).body[0]
    docstring_end = function.body[0].end_lineno
    assert function.end_lineno - docstring_end <= 80
