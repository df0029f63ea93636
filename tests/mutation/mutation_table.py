"""Regenerate the mutant × check table of ``docs/mutation.md`` (a script, not a test).

Run ``python tests/mutation/mutation_table.py`` from the repository root: every
check is run on every mutant it applies to, and the outcome ("caught" = the check
raised ``AssertionError``) and wall time are printed as a Markdown table.
"""

from __future__ import annotations

import contextlib
import io
import sys
import time
from pathlib import Path


def main() -> None:
    here = Path(__file__).resolve().parent
    sys.path[:0] = [str(here), str(here.parent / "exact")]
    import numpy as np
    from exact_properties import (
        closed_form_property,
        lookahead_exact_property,
        metropolis_property,
    )
    from mutants import (
        LinearRefresh,
        NoFinalHalfKickLeapfrog,
        NoFlipRule,
        NoKineticLeapfrog,
        NoReverseTermRule,
        OffByOneRule,
    )

    from ladder_mcmc import Ladder, Leapfrog, LookAhead, MomentumRefresh
    from ladder_mcmc.ladder import LookAheadRule
    from ladder_mcmc.models import IllConditionedGaussian
    from ladder_mcmc.verify import (
        FiniteLadder,
        assert_fixed_point,
        assert_generalized_detailed_balance,
        assert_map,
        assert_one_step_invariance,
        assert_stochastic,
        assert_transition_frequencies,
    )

    witness = FiniteLadder([1, 2, 3, 4, 0], [1, 3, 2, 5, 4])
    target = IllConditionedGaussian(2, log_condition=2)
    hyp = {"derandomize": True, "database": None, "report_multiple_bugs": False}

    def run(check):
        start = time.perf_counter()
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                check()
            verdict = "pass"
        except AssertionError:
            verdict = "**caught**"
        return f"{verdict} {time.perf_counter() - start:.2f} s"

    print("| mutant | check | outcome |\n|---|---|---|")
    for m in (NoReverseTermRule, OffByOneRule, NoFlipRule):
        hmc_kernel = Ladder(Leapfrog(target, 0.8, 10), m(4), MomentumRefresh(0.1))
        checks = {
            "assert_stochastic (witness)": lambda m=m: assert_stochastic(m(3), witness),
            "assert_fixed_point (witness)": lambda m=m: assert_fixed_point(m(3), witness),
            "assert_generalized_detailed_balance (witness)": lambda m=m: (
                assert_generalized_detailed_balance(m(3), witness)
            ),
            "exact property, Hypothesis 300": lambda m=m: lookahead_exact_property(m, 300, **hyp)(),
            "closed form = recursion, Hypothesis 300": lambda m=m: closed_form_property(
                m, 300, **hyp
            )(),
            "K=1 = MH, Hypothesis 300": lambda m=m: metropolis_property(m, 300, **hyp)(),
            "sampled vs exact (ragged)": lambda m=m: assert_transition_frequencies(
                Ladder(witness, m(3)), reference=LookAhead(witness, 3), n_per_state=500
            ),
            "one-step invariance (HMC, K=4)": lambda k=hmc_kernel: assert_one_step_invariance(
                k, target.sample, seed=3
            ),
        }
        for name, check in checks.items():
            print(f"| {m.__name__} | {name} | {run(check)} |", flush=True)
    rng = np.random.default_rng(0)
    for cls in (NoFinalHalfKickLeapfrog, NoKineticLeapfrog):
        map_ = cls(target, 0.8, 10)
        states = map_.prepare(target.sample(8, rng), rng)
        for name, rule, beta in [("K=4, β=0.1", 4, 0.1), ("K=1, β=1", 1, 1.0)]:
            kernel = Ladder(map_, LookAheadRule(rule), MomentumRefresh(beta))
            print(
                f"| {cls.__name__} | one-step invariance ({name}) | "
                f"{run(lambda k=kernel: assert_one_step_invariance(k, target.sample, seed=3))} |"
            )
        contract = run(lambda m=map_, s=states: assert_map(m, s))
        print(f"| {cls.__name__} | assert_map | {contract} |")
    for beta in (0.5, 0.1):
        kernel = Ladder(Leapfrog(target, 0.8, 10), LookAheadRule(4), LinearRefresh(beta))
        print(
            f"| LinearRefresh(β={beta}) | one-step invariance | "
            f"{run(lambda k=kernel: assert_one_step_invariance(k, target.sample, seed=4))} |"
        )


if __name__ == "__main__":
    main()
