"""The suite's result as JSON and as a Markdown table.

:func:`summary_rows` gives one row per model and sampler: the medians over seeds of each
figure (NaN seeds left out: their failure is counted), the runs that passed, and the
rules broken. :func:`to_json` holds the settings, every run (figures and verdict) and
the rows, JSON-ready (NaN and infinities as ``null``); :func:`markdown` the table, then
each failed run and why.
"""

from __future__ import annotations

import math
from typing import Any

import attrs
import numpy as np

from ladder_mcmc.bench.registry import HARD
from ladder_mcmc.bench.suite import RunResult, SuiteResult
from ladder_mcmc.bench.verdict import RHAT_MAX, RULES, Z_MAX

FIGURES = (
    "ess_per_1000_grads",
    "ess_per_1000_grads_with_warmup",
    "ess_per_second",
    "max_rhat",
    "max_mean_error",
    "max_abs_z",
    "max_sd_error",
    "max_abs_z_sd",
    "min_ess",
)
"""The figures a row gives the medians of."""


def _median(values: list[float | None]) -> float:
    finite = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    return float(np.median(finite)) if finite else math.nan


def summary_rows(result: SuiteResult) -> list[dict[str, Any]]:
    """One dict per model and sampler: ``model``, ``sampler``, ``runs``, ``passed`` (runs
    that passed), ``rules`` (broken by any run), the median of each of :data:`FIGURES`,
    ``step_size`` and ``wall_time`` over seeds."""
    groups: dict[tuple[str, str], list[RunResult]] = {}
    for run in result.runs:
        groups.setdefault((run.model, run.sampler), []).append(run)
    rows = []
    for (model, sampler), runs in groups.items():
        row: dict[str, Any] = {"model": model, "sampler": sampler, "runs": len(runs)}
        row["passed"] = sum(r.passed for r in runs)
        broken = {rule for r in runs for rule in r.verdict.rules}
        row["rules"] = [rule for rule in RULES if rule in broken]
        for name in FIGURES:
            row[name] = _median([getattr(r.figures, name) for r in runs])
        row["step_size"] = _median([r.step_size for r in runs])
        row["wall_time"] = _median([r.wall_time for r in runs])
        rows.append(row)
    return rows


def _clean(value: Any) -> Any:
    """JSON-ready: NaN and infinities as None, tuples as lists, numpy numbers as Python's."""
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def run_record(run: RunResult) -> dict[str, Any]:
    """One run as a JSON-ready dict: its figures, verdict and costs."""
    record = attrs.asdict(run, recurse=False)
    record["figures"] = attrs.asdict(run.figures)
    record["verdict"] = {
        "passed": run.passed,
        "interrupted": run.interrupted,
        "failures": [attrs.asdict(f) for f in run.verdict.failures],
    }
    return _clean(record)


def to_json(result: SuiteResult) -> dict[str, Any]:
    """The result as a JSON-ready dict: ``settings``, ``meta``, ``passed`` (every run, and
    not interrupted), ``interrupted``, ``passed_runs``, ``total_runs``, ``rows``
    (:func:`summary_rows`) and ``runs``."""
    return _clean(
        {
            "settings": attrs.asdict(result.settings),
            "meta": result.meta,
            "passed": result.passed,
            "interrupted": result.interrupted,
            "passed_runs": len(result.runs) - len(result.failed),
            "total_runs": len(result.runs),
            "rows": summary_rows(result),
            "runs": [run_record(r) for r in result.runs],
        }
    )


_COMPILE_OUT = {
    "subtract": "JAX's compile events subtracted",
    "warm": "each compiled run timed again with JAX's persistent cache warm",
}


def _g(value: float, digits: int = 3) -> str:
    return "–" if value is None or math.isnan(value) else f"{value:.{digits}g}"


def markdown(result: SuiteResult) -> str:
    """The result as Markdown: a heading with the settings, one table row per model and
    sampler (medians over seeds), the pass count, and each failed run's reasons."""
    s = result.settings
    seeds = ", ".join(str(x) for x in s.seeds)
    lines = [
        f"# Benchmark suite: {s.kernel}"
        + (" beside NUTS (NumPyro)" if s.nuts else "")
        + f", {s.chains} chains × ({s.warmup} warm-up + {s.draws} draws), seeds {seeds}",
        "",
        f"Medians over seeds. ESS: min over coordinates of the bulk ESS of x and x², per "
        f"1000 gradient evaluations (sampling; with warm-up) and per second (warm-up "
        f"included, compile time left out: {_COMPILE_OUT[s.compile_out]}). A run fails "
        f"on R-hat > {RHAT_MAX}, a frozen chain, a collapsed step size or a warm-up's "
        f"warning, non-finite draws, or "
        f"|z| > {Z_MAX:g} of a mean or of an sd against its reference.",
        "",
        "| model | sampler | ESS/1000 grads | with warm-up | ESS/s | max R-hat | "
        "max abs err/sd | max abs z | max abs z of sd | step size | passed | failures |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in summary_rows(result):
        lines.append(
            f"| {row['model']} | {row['sampler']} | {_g(row['ess_per_1000_grads'])} | "
            f"{_g(row['ess_per_1000_grads_with_warmup'])} | {_g(row['ess_per_second'])} | "
            f"{_g(row['max_rhat'], 4)} | {_g(row['max_mean_error'], 2)} | "
            f"{_g(row['max_abs_z'], 2)} | {_g(row['max_abs_z_sd'], 2)} | "
            f"{_g(row['step_size'], 2)} | "
            f"{row['passed']}/{row['runs']} | {', '.join(row['rules']) or '–'} |"
        )
    failed = result.failed
    lines += ["", f"{len(result.runs) - len(failed)} of {len(result.runs)} runs passed."]
    if result.interrupted:
        lines[-1] += " INTERRUPTED (Ctrl-C): the suite stopped early; the last run is not judged."
    hard = [m for m in s.models if m in HARD]
    if hard:
        lines += [
            "",
            f"Hard models ({', '.join(hard)}): every sampler tried, NUTS included, fails "
            "R-hat on them at the suite's sizes; compare with NUTS's rows.",
        ]
    if failed:
        lines += ["", "Failed runs:", ""]
        lines += [
            f"* {r.model}, {r.sampler}, seed {r.seed}: {'; '.join(r.verdict.reasons)}"
            for r in failed
        ]
    seconds = result.meta.get("seconds")
    lines += ["", f"NUTS: {result.meta.get('nuts', 'not asked')}."]
    if seconds is not None:
        lines[-1] += f" The suite took {seconds:.0f} s."
    return "\n".join(lines) + "\n"


__all__ = ["FIGURES", "markdown", "run_record", "summary_rows", "to_json"]
