"""The default set is what a correct sampler passes at the suite's sizes; the hard models
run behind ``--hard``, NUTS beside them, and the exit status covers them."""

from __future__ import annotations

import json

import pytest

from ladder_mcmc.bench import model_names, run_suite
from ladder_mcmc.bench.registry import DEFAULT, HARD, SUITE, select
from ladder_mcmc.paper import bench_command, cli


def test_the_default_set_is_every_model_but_the_hard_ones():
    assert HARD == ("rough_well", "funnel", "eight_schools_centered")
    assert set(DEFAULT) | set(HARD) == set(model_names()) and not set(DEFAULT) & set(HARD)
    assert [m.name for m in select(None)] == list(DEFAULT)
    assert all(SUITE[m].hard for m in HARD)
    assert [m.name for m in select(["funnel"])] == ["funnel"]  # named, a hard one runs


def _args(*argv):
    return cli.build_parser().parse_args(["bench", *argv])


@pytest.mark.parametrize(
    ("argv", "models", "nuts_models", "nuts"),
    [
        (["--quick"], DEFAULT, None, False),
        (["--quick", "--hard"], DEFAULT + HARD, HARD, True),  # NUTS beside the hard ones
        (["--quick", "--hard", "--no-nuts"], DEFAULT + HARD, None, False),
        (["--quick", "--hard", "--nuts"], DEFAULT + HARD, None, True),
        ([], DEFAULT, None, True),
        (["--hard"], DEFAULT + HARD, None, True),
        (["--models", "gauss2", "--hard", "--quick"], ("gauss2", *HARD), HARD, True),
    ],
)
def test_which_models_run_and_where_nuts_runs(argv, models, nuts_models, nuts):
    assert bench_command.models_to_run(_args(*argv)) == (models, nuts_models, nuts)


def test_nuts_runs_on_the_models_asked_only():
    result = run_suite(
        models=["gauss2"], seeds=0, chains=2, warmup=10, draws=8, nuts=True, nuts_models=HARD
    )
    assert result.samplers == ("lahmc",)  # NumPyro or not: gauss2 is not a hard model


def test_bench_hard_reports_the_hard_models_and_its_exit_status_covers_them(tmp_path):
    argv = ["bench", "--models", "gauss2", "--hard", "--no-nuts", "--quiet"]
    code = cli.main([*argv, "--warmup", "100", "--draws", "100", "--out", str(tmp_path)])
    result = json.loads((tmp_path / "bench.json").read_text())
    assert result["settings"]["models"] == ["gauss2", *HARD]
    hard_failed = [r for r in result["runs"] if r["model"] in HARD and not r["verdict"]["passed"]]
    assert hard_failed and code == 1  # they fail at these sizes, and the exit says so
    assert "Hard models (rough_well, funnel, eight_schools_centered)" in (
        (tmp_path / "bench.md").read_text()
    )


@pytest.mark.slow
def test_the_quick_suite_passes_with_the_default_kernel(tmp_path):
    """``ladder-mcmc bench --quick`` on a clean clone: exit status 0."""
    assert cli.main(["bench", "--quick", "--quiet", "--out", str(tmp_path)]) == 0
    result = json.loads((tmp_path / "bench.json").read_text())
    assert result["settings"]["models"] == list(DEFAULT) and result["passed"]
