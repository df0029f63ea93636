"""The front door: what users imported before the package moved into subpackages still imports.

* every name importable from ``ladder_mcmc`` before (and ``ChainStreams``);
* the public namespaces ``ladder_mcmc.targets``, ``.rules``, ``.refresh``, ``.metrics``,
  ``.kinetic``, ``.summary``, ``.finite``, ``.testing`` and ``.posteriors`` (with
  ``posteriors.load`` and its submodules), each with every public name it had, the same
  objects as in their new homes;
* the former fast-path module's switch ``ragged_leapfrog.COMPILED`` still switches;
* ``import ladder_mcmc`` imports none of the optional or test dependencies.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import ladder_mcmc
from ladder_mcmc import former_paths

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

#: further public names of the namespaces, found in their modules
MORE_NAMES = {
    "refresh": ["NO_REFRESH", "as_beta", "check_refresh_kinetic", "same_kinetic_energy"],
    "metrics": ["SYMMETRY_RTOL"],
    "summary": ["default_names"],
    "finite": ["Row", "operator_index"],
}

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
def test_every_public_namespace_imports_with_its_names(namespace):
    home_name, names = NAMESPACES[namespace]
    module = importlib.import_module(f"ladder_mcmc.{namespace}")
    home = importlib.import_module(
        "ladder_mcmc" if home_name == "ladder_mcmc" else f"ladder_mcmc.{home_name}"
    )
    for name in names + MORE_NAMES.get(namespace, []):
        namespace_dict: dict = {}
        exec(f"from ladder_mcmc.{namespace} import {name}", namespace_dict)
        assert namespace_dict[name] is getattr(module, name)
        if name in names:  # the same object as in its new home
            assert getattr(module, name) is getattr(home, name), name
    # reachable as an attribute of the package too, without an import of its own
    assert getattr(ladder_mcmc, namespace) is module


def test_a_module_that_moved_whole_is_its_new_module():
    """The same module object: monkeypatching either patches both."""
    for former, home in [
        ("targets", "models.targets"),
        ("metrics", "hamiltonian.metrics"),
        ("summary", "diagnostics.summary"),
        ("posteriors", "models.posteriors"),
        ("checkpoint", "run.checkpoint"),
    ]:
        module = importlib.import_module(f"ladder_mcmc.{former}")
        assert module is importlib.import_module(f"ladder_mcmc.{home}"), former


def test_importing_the_former_hmc_module_leaves_the_hmc_function():
    """``ladder_mcmc.hmc`` was a module and is a function (as it was after ``import
    ladder_mcmc``): importing the former module, as a checkpoint naming
    ``ladder_mcmc.hmc:PhaseState`` does, must not rebind it."""
    former = importlib.import_module("ladder_mcmc.hmc")
    assert former.PhaseState is ladder_mcmc.PhaseState and former.lahmc is ladder_mcmc.lahmc
    assert callable(ladder_mcmc.hmc) and ladder_mcmc.hmc.__name__ == "hmc"
    from ladder_mcmc.hmc import Leapfrog, hmc

    assert Leapfrog is ladder_mcmc.Leapfrog and hmc is ladder_mcmc.hmc
    # every former module named like a name of the package is protected so
    formers = set(former_paths.FORMER.values()) | set(former_paths.FORMER_NAMES.values())
    shadowed = {f for f in formers if f.count(".") == 1 and f.split(".")[1] in ladder_mcmc.__all__}
    assert shadowed == set(former_paths.SHADOWED)


@pytest.mark.parametrize("submodule", POSTERIOR_MODULES)
def test_posterior_submodules_import_by_their_former_path(submodule):
    former = importlib.import_module(f"ladder_mcmc.posteriors.{submodule}")
    assert former is importlib.import_module(f"ladder_mcmc.models.posteriors.{submodule}")


def test_posteriors_load_by_its_former_path():
    from ladder_mcmc.posteriors import load, names
    from ladder_mcmc.posteriors.references import ENV_VAR

    assert ENV_VAR == "LADDER_MCMC_POSTERIORDB"
    assert len(names()) == 7
    assert load("kidiq-kidscore_momiq").dim == 3


def test_an_unknown_name_is_still_an_attribute_error():
    with pytest.raises(AttributeError):
        ladder_mcmc.no_such_module  # noqa: B018
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("ladder_mcmc.no_such_module")


def test_the_former_fast_path_switch_sets_the_new_one(monkeypatch):
    from ladder_mcmc import drivers, ragged_leapfrog

    monkeypatch.setattr(drivers, "COMPILED", None)
    ragged_leapfrog.COMPILED = False
    try:
        assert drivers.COMPILED is False and ragged_leapfrog.COMPILED is False
        assert not ragged_leapfrog.compiled(10**6)
    finally:
        ragged_leapfrog.COMPILED = None
    assert drivers.COMPILED is None


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
