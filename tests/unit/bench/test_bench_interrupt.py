"""A run cut short by Ctrl-C is never judged: ``run_suite`` marks it interrupted and stops;
``ladder-mcmc bench`` and ``ladder-mcmc posterior`` say so and exit with 130."""

from __future__ import annotations

import attrs
import numpy as np

from ladder_mcmc import lahmc
from ladder_mcmc.bench import Figures, judge, run_suite, runs, to_json
from ladder_mcmc.paper import cli, posterior_command


class Interrupting:
    """A target whose gradient raises KeyboardInterrupt at its ``after``-th call (Ctrl-C
    inside the target); ``after=None`` only counts the calls."""

    def __init__(self, target, after=None):
        self.target, self.dim, self.after, self.calls = target, target.dim, after, 0

    def energy(self, x):
        return self.target.energy(x)

    def grad(self, x):
        self.calls += 1
        if self.after is not None and self.calls >= self.after:
            raise KeyboardInterrupt
        return self.target.grad(x)


def _interrupting_factory(after):
    """Plain ``lahmc`` for the suite's untimed first run, then a target that is
    interrupted at its ``after``-th gradient call."""
    made = []

    def interrupting(target):
        made.append(target)
        return lahmc(target if len(made) == 1 else Interrupting(target, after))

    return interrupting


def test_an_interrupted_verdict_is_that_alone_whatever_the_figures():
    good = Figures(max_rhat=1.0, max_abs_z=0.1, max_abs_z_sd=0.1)
    assert judge(good).passed
    verdict = judge(good, interrupted=True)
    assert not verdict.passed and verdict.rules == ("interrupted",)


def test_ctrl_c_during_warmup_marks_the_run_interrupted_and_stops_the_suite():
    result = run_suite(
        _interrupting_factory(after=5),
        models=["gauss2", "kidiq"],
        seeds=(0, 1),
        chains=2,
        warmup=50,
        draws=50,
    )
    assert result.interrupted and not result.passed
    (run,) = result.runs  # neither the next seed nor the next model ran
    assert (run.model, run.seed) == ("gauss2", 0)
    assert run.interrupted and not run.passed and run.verdict.rules == ("interrupted",)
    assert np.isnan(run.figures.max_rhat)  # nothing computed on the partial draws
    data = to_json(result)
    assert data["interrupted"] and not data["passed"]
    assert data["runs"][0]["verdict"]["interrupted"]


def test_ctrl_c_during_sampling_is_not_judged_though_its_draws_would_pass():
    counted = []

    def counting(t):
        counted.append(Interrupting(t))
        return lahmc(counted[-1])

    clean = run_suite(counting, models=["gauss2"], seeds=0, chains=4, warmup=300, draws=600)
    assert clean.passed, clean.runs[0].verdict.reasons
    total = counted[-1].calls  # warm-up and 600 sampling steps
    # interrupted near the end of sampling: most draws made, and still not judged
    result = run_suite(
        _interrupting_factory(after=total - 20),
        models=["gauss2"],
        seeds=0,
        chains=4,
        warmup=300,
        draws=600,
    )
    (run,) = result.runs
    assert run.interrupted and run.verdict.rules == ("interrupted",) and not result.passed


KERNELS = '''
from ladder_mcmc import lahmc

made = []


class Interrupting:
    def __init__(self, target):
        self.target, self.dim, self.calls = target, target.dim, 0

    def energy(self, x):
        return self.target.energy(x)

    def grad(self, x):
        self.calls += 1
        if self.calls >= 5:
            raise KeyboardInterrupt
        return self.target.grad(x)


def interrupted(target):
    """Plain for the untimed first run, then Ctrl-C during warm-up."""
    made.append(target)
    return lahmc(target if len(made) == 1 else Interrupting(target))
'''


def test_bench_exits_130_on_ctrl_c_and_writes_no_verdict(tmp_path, capsys):
    (tmp_path / "kernels.py").write_text(KERNELS)
    out = tmp_path / "out"
    argv = ["bench", "--models", "gauss2", "kidiq", "--quick", "--quiet", "--out", str(out)]
    code = cli.main([*argv, "--kernel", f"{tmp_path / 'kernels.py'}:interrupted"])
    assert code == 130
    captured = capsys.readouterr()
    assert "interrupted (Ctrl-C) during gauss2, interrupted, seed 0" in captured.err
    assert "not written" in captured.err
    assert "runs passed" not in captured.out  # no table, no verdict
    assert not (out / "bench.json").exists() and not (out / "bench.md").exists()


def _posterior_interrupted_after(monkeypatch, after):
    monkeypatch.setattr(
        posterior_command, "lahmc", lambda target: lahmc(Interrupting(target, after))
    )


def test_posterior_exits_130_on_ctrl_c_during_warmup(tmp_path, monkeypatch, capsys):
    _posterior_interrupted_after(monkeypatch, 5)
    out = tmp_path / "p.json"
    argv = ["posterior", "kidiq-kidscore_momiq", "--steps", "50", "--warmup", "40", "--quiet"]
    assert cli.main([*argv, "--json", str(out)]) == 130  # not split_rhat's ValueError
    captured = capsys.readouterr()
    assert "interrupted (Ctrl-C) during warm-up" in captured.err
    assert "draws not kept" in captured.err
    assert "passed" not in captured.out and "FAILED" not in captured.out
    assert not out.exists()


def test_posterior_exits_130_on_ctrl_c_during_sampling(tmp_path, monkeypatch, capsys):
    counted = []

    def counting(target):
        counted.append(Interrupting(target))
        return lahmc(counted[-1])

    monkeypatch.setattr(posterior_command, "lahmc", counting)
    argv = ["posterior", "kidiq-kidscore_momiq", "--steps", "50", "--warmup", "40", "--quiet"]
    cli.main(argv)  # a whole run, to count its gradient calls
    capsys.readouterr()
    _posterior_interrupted_after(monkeypatch, counted[-1].calls - 10)
    assert cli.main(argv) == 130
    err = capsys.readouterr().err
    assert "interrupted (Ctrl-C) after " in err and " of 50 steps" in err


def test_with_the_traces_mark_dropped_the_interruption_would_go_unseen(monkeypatch):
    """The broken variant the tests above catch: ``run_kernel`` ignoring
    ``trace.interrupted`` judges the partial run and the suite goes on."""
    real = runs.sample
    monkeypatch.setattr(
        runs, "sample", lambda *a, **kw: attrs.evolve(real(*a, **kw), interrupted=False)
    )
    result = run_suite(
        _interrupting_factory(after=5), models=["gauss2"], seeds=(0, 1), chains=2, warmup=50,
        draws=50,
    )  # fmt: skip
    assert not result.interrupted and len(result.runs) == 2
    assert not result.runs[0].interrupted and "interrupted" not in result.runs[0].verdict.rules
