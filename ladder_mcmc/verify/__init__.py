"""Exact and property-based verification of ladder kernels and maps.

Three kinds of check (docs/design.md §7; ``docs/verification.md`` has the recipes):

* **exact**, on finite ladders (:class:`FiniteLadder`: a permutation of a few
  integer states with rational weights), in rational arithmetic: the kernel's
  transition matrix (:func:`exact_transition_matrix`, built from the rule's own
  arithmetic) is stochastic, keeps the extended target and satisfies the paper's
  generalized detailed balance (section 4.3) — :func:`assert_stochastic`,
  :func:`assert_fixed_point`, :func:`assert_generalized_detailed_balance` (and
  :func:`assert_exact`, all three at once), fed by the Hypothesis strategy
  :func:`finite_ladders`; :class:`MeasuredLadder` (a base measure on the states,
  :func:`measured_ladders`) is the finite model of a map that changes volume, and
  :class:`AuxiliaryLadder` (:func:`auxiliary_ladders`) of a map whose parameter ``α``
  is drawn from a law ``p(α | ζ)`` carried in the state (docs/design.md §14);
* **map contracts**, numerically — :func:`check_map` / :func:`assert_map`:
  inverse, flip, volume preservation or a declared Jacobian, determinism, the
  flip-invariance of a map parameter's law (docs/design.md §14), fed by
  :func:`phase_states` for leapfrog-like maps;
* **statistical**, for continuous kernels — :func:`assert_one_step_invariance`:
  start many chains at exact draws of the extended target, take one step, and
  test that the law did not change (TensorFlow Probability's target-conservation
  test).

Every assertion raises :class:`AssertionError` naming the state (or chain, or
feature) and the size of the discrepancy, so it can be used inside pytest and
inside Hypothesis properties alike. ``hypothesis`` is needed only for the
strategies (imported when one is built); ``scipy`` only for the statistical checks.
"""

from ladder_mcmc.verify.auxiliary_finite import (
    AuxiliaryLadder,
    InnerResample,
    PermutationFamily,
    TableLaw,
)
from ladder_mcmc.verify.exact import (
    assert_exact,
    assert_fixed_point,
    assert_generalized_detailed_balance,
    assert_stochastic,
    assert_transition_frequencies,
)
from ladder_mcmc.verify.finite import (
    FiniteLadder,
    InvolutionLadder,
    extended_index,
    stationary_distribution,
)
from ladder_mcmc.verify.invariance import (
    InvarianceReport,
    assert_one_step_invariance,
    default_features,
)
from ladder_mcmc.verify.map_contract import MapReport, assert_map, check_map
from ladder_mcmc.verify.measured import MeasuredLadder
from ladder_mcmc.verify.strategies import (
    auxiliary_ladders,
    finite_ladders,
    measured_ladders,
    phase_states,
)
from ladder_mcmc.verify.transitions import (
    IntegerKernel,
    exact_kernel,
    exact_rungs,
    exact_transition_matrix,
    exact_transition_rows,
    ladder_kernel,
    outcome_probabilities,
    refresh_kernel,
)

__all__ = [
    "AuxiliaryLadder",
    "FiniteLadder",
    "InnerResample",
    "IntegerKernel",
    "InvarianceReport",
    "InvolutionLadder",
    "MapReport",
    "MeasuredLadder",
    "PermutationFamily",
    "TableLaw",
    "assert_exact",
    "assert_fixed_point",
    "assert_generalized_detailed_balance",
    "assert_map",
    "assert_one_step_invariance",
    "assert_stochastic",
    "assert_transition_frequencies",
    "auxiliary_ladders",
    "check_map",
    "default_features",
    "exact_kernel",
    "exact_rungs",
    "exact_transition_matrix",
    "exact_transition_rows",
    "extended_index",
    "finite_ladders",
    "ladder_kernel",
    "measured_ladders",
    "outcome_probabilities",
    "phase_states",
    "refresh_kernel",
    "stationary_distribution",
]
