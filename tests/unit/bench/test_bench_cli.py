"""``ladder-mcmc bench`` and ``ladder-mcmc posterior``: outputs and exit codes."""

from __future__ import annotations

import json

import pytest

from ladder_mcmc.paper import cli

FROZEN = '''
from ladder_mcmc import lahmc


def frozen(target):
    """A step too small to move a float: every chain frozen."""
    return lahmc(target, step_size=1e-300, n_leapfrog=1, beta=1.0)
'''


def test_bench_passes_with_exit_code_0_and_writes_json_and_markdown(tmp_path, capsys):
    extra = tmp_path / "extra.json"
    argv = ["bench", "--models", "gauss2", "--quick", "--quiet", "--out", str(tmp_path)]
    assert cli.main([*argv, "--json", str(extra)]) == 0
    result = json.loads((tmp_path / "bench.json").read_text())
    assert json.loads(extra.read_text()) == result
    assert result["passed"] and result["total_runs"] == 1
    assert result["settings"]["warmup"] == 500 and result["settings"]["nuts"] is False
    md = (tmp_path / "bench.md").read_text()
    assert "| gauss2 | lahmc |" in md and "1 of 1 runs passed." in md
    assert md in capsys.readouterr().out + "\n"


def test_bench_passes_how_to_time_and_which_nuts_chains_to_the_suite(tmp_path):
    argv = ["bench", "--models", "gauss2", "--quick", "--quiet", "--out", str(tmp_path)]
    assert cli.main([*argv, "--compile-out", "warm", "--nuts-chains", "sequential"]) == 0
    settings = json.loads((tmp_path / "bench.json").read_text())["settings"]
    assert settings["compile_out"] == "warm"
    assert settings["nuts_settings"]["chain_method"] == "sequential"


def test_bench_exits_1_when_a_run_of_a_users_kernel_fails(tmp_path, capsys):
    (tmp_path / "kernels.py").write_text(FROZEN)
    kernel = f"{tmp_path / 'kernels.py'}:frozen"
    argv = [
        "bench",
        "--models",
        "gauss2",
        "funnel",
        "--kernel",
        kernel,
        "--warmup",
        "0",
        "--no-nuts",
    ]
    code = cli.main([*argv, "--draws", "10", "--seeds", "2", "--out", str(tmp_path)])
    assert code == 1
    result = json.loads((tmp_path / "bench.json").read_text())
    assert result["settings"]["kernel"] == "frozen"
    assert result["passed_runs"] == 0 and result["total_runs"] == 4
    assert all(r["verdict"]["failures"][0]["rule"] == "frozen" for r in result["runs"])
    assert "gauss2 · frozen · seed 1" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--models", "nope"], "unknown suite model 'nope'"),
        (["--kernel", "no_such_module_here:f"], "cannot import 'no_such_module_here'"),
        (["--kernel", "json:no_such_name"], "'json' has no callable 'no_such_name'"),
        (["--kernel", "lahmc"], "must be module:callable"),
        (["--chains", "1"], "must be an integer >= 2"),
        (["--compile-out", "cold"], "invalid choice: 'cold'"),
    ],
)
def test_bench_bad_arguments_exit_with_usage(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["bench", *argv])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_posterior_exits_1_on_a_failed_run_whatever_z_says(tmp_path, capsys):
    out = tmp_path / "p.json"
    argv = ["posterior", "arma-arma11", "--steps", "20", "--warmup", "0", "--seed", "0"]
    assert cli.main([*argv, "--quiet", "--json", str(out)]) == 1
    printed = capsys.readouterr().out
    assert "FAILED: " in printed and "R-hat" in printed
    result = json.loads(out.read_text())
    assert result["passed"] is False and result["failures"]
