"""The two lines ``run/sample.py`` needs to carry ``Recorder.step_cost`` into traces and
checkpoints, applied by monkeypatching until they are merged there.

``sample`` builds its :class:`~ladder_mcmc.run.trace.Trace` in ``_trace`` and its
checkpoint trees in ``_save``; for a map whose cost varies per chain and step
(``map.cost_of``, a jittered trajectory length) both must pass the recorder's
``step_cost[:done]`` (``Trace(..., step_cost=...)``, ``trees["step_cost"]``;
``resume`` restores it). :func:`sample_records_step_cost` adds exactly that, and does
nothing once ``run/sample.py`` does it itself.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect

import attrs

from ladder_mcmc.run import checkpoint

run_sample = importlib.import_module("ladder_mcmc.run.sample")  # the module, not the function

#: whether run/sample.py passes the recorded costs itself
MERGED = "step_cost" in inspect.getsource(run_sample)


def _costs(recorder):
    cost = recorder.step_cost
    return None if cost is None else cost[: recorder.completed()]


@contextlib.contextmanager
def sample_records_step_cost():
    """Within: ``sample``/``resume`` traces and checkpoints carry ``step_cost``."""
    if MERGED:
        yield
        return
    trace_, save_ = run_sample._trace, run_sample._save

    def _trace(run, final, interrupted):
        return attrs.evolve(trace_(run, final, interrupted), step_cost=_costs(run.recorder))

    def _save(run):
        real = checkpoint.save

        def save(path, meta, trees):
            real(path, meta, {**trees, "step_cost": _costs(run.recorder)})

        checkpoint.save = save
        try:
            save_(run)
        finally:
            checkpoint.save = real

    run_sample._trace, run_sample._save = _trace, _save
    try:
        yield
    finally:
        run_sample._trace, run_sample._save = trace_, save_
