"""The front door: the package's public names, where they live, and what ``import`` loads.

* every name of ``ladder_mcmc.__all__`` (the names users imported before the package moved
  into subpackages, ``ChainStreams`` and the later ones) imports from the top level;
* every public name of the former namespaces (``ladder_mcmc.targets``, ``.rules``, …,
  removed with ``former_paths``) imports from its home (``ladder_mcmc.models``,
  ``.ladder``, ``.hamiltonian``, ``.diagnostics``, ``.verify``, ``.models.posteriors``),
  and the former modules and the engine's former package (``ladder_mcmc.drivers``) are gone;
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

#: ``ladder_mcmc.__all__`` before the move (issue 14), and what it gained
TOP_LEVEL = [
    "ComposedRefresh", "CycleShift", "DirectionRefresh", "FLIP", "FunctionTarget",
    "HarmonicFlow", "JitteredLeapfrog", "JitteredPhaseState", "Ladder", "LadderState",
    "Leapfrog", "LiftResampleRefresh", "LiftedLeapfrog", "LiftedPhaseState",
    "LiftedQuantileRefresh", "LookAhead", "LookAheadRule", "McLachlan2", "Metric",
    "MomentumRefresh", "NormalizedMomentumRefresh", "PersistentUniformRule", "PhaseState",
    "PowerKinetic", "ReducedFlipLookAheadRule", "ReducedFlipRule", "Refresh", "ReversibleMap",
    "Rule", "STAY", "SamplingWarning", "StepInfo", "StepSizeJitter", "Target",
    "TemperedLeapfrog", "Trace", "Yoshida4", "check_gradient", "hmc", "lahmc", "lifted_lahmc",
    "resume", "sample",
    "ChainStreams",
    "JitteredLengthLeapfrog", "JitteredLengthState", "LengthJitter",
    "apply_warmup",
]  # fmt: skip

#: the public names of each namespace before the move -> where each lives now
NAMESPACES = {
    "targets": ("models", ["FunctionTarget", "IllConditionedGaussian", "RoughWell", "Target"]),
    "rules": (
        "ladder",
        ["FLIP", "LookAheadRule", "Rule", "STAY", "ReducedFlipRule", "ReducedFlipLookAheadRule",
         "PersistentUniformRule"],
    ),
    "refresh": (
        "ladder_mcmc",
        ["ComposedRefresh", "DirectionRefresh", "MomentumRefresh", "Refresh"],
    ),
    "metrics": ("hamiltonian", ["Metric", "row_dot"]),
    "kinetic": ("hamiltonian", ["KineticEnergy", "NormalizedMomentumRefresh", "PowerKinetic"]),
    "summary": (
        "diagnostics",
        ["Summary", "min_bulk_ess", "rank_normalize", "summary", "to_inference_data"],
    ),
    "finite": (
        "verify",
        ["FiniteLadder", "IntegerKernel", "InvolutionLadder", "exact_kernel",
         "exact_transition_matrix", "exact_transition_rows", "extended_index", "ladder_kernel",
         "outcome_probabilities", "refresh_kernel", "stationary_distribution"],
    ),
    "testing": (
        "verify",
        ["InvarianceReport", "MapReport", "assert_exact", "assert_fixed_point",
         "assert_generalized_detailed_balance", "assert_map", "assert_one_step_invariance",
         "assert_stochastic", "assert_transition_frequencies", "check_map", "default_features",
         "finite_ladders", "phase_states"],
    ),
    "posteriors": (
        "models.posteriors",
        ["ArK", "Arma11", "Blr", "DEFAULT_PATH", "ENV_VAR", "EightSchoolsNoncentered", "Garch11",
         "KidscoreMomiq", "LowDimGaussMix", "MODELS", "Posterior", "Reference", "find_database",
         "load", "names"],
    ),
}  # fmt: skip

POSTERIOR_MODULES = [
    "ark", "arma", "blr", "comparison", "eight_schools", "garch", "gauss_mix", "kidiq",
    "posterior", "references", "transforms",
]  # fmt: skip


@pytest.mark.parametrize("name", TOP_LEVEL)
def test_every_former_top_level_name_imports(name):
    namespace: dict = {}
    exec(f"from ladder_mcmc import {name}", namespace)
    assert namespace[name] is getattr(ladder_mcmc, name)
    assert name in ladder_mcmc.__all__


def test_the_top_level_names_are_everything_all_says():
    assert sorted(ladder_mcmc.__all__) == sorted(TOP_LEVEL)


@pytest.mark.parametrize("namespace", list(NAMESPACES))
def test_every_former_namespace_name_imports_from_its_home(namespace):
    home_name, names = NAMESPACES[namespace]
    home = importlib.import_module(
        "ladder_mcmc" if home_name == "ladder_mcmc" else f"ladder_mcmc.{home_name}"
    )
    for name in names:
        found: dict = {}
        exec(f"from {home.__name__} import {name}", found)
        assert found[name] is getattr(home, name), name


@pytest.mark.parametrize(
    "former", [*NAMESPACES, "checkpoint", "drivers", "ragged_leapfrog", "former_paths"]
)
def test_the_former_modules_are_gone(former):
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
