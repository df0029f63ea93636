"""Bring your own model: PyMC's non-centred eight schools, sampled by Look-Ahead HMC.

The model is written in PyMC as usual. :func:`~ladder_mcmc.models.from_pymc` compiles its
log density on PyMC's unconstrained space (``tau`` as ``tau_log__``) with JAX, once, for
a batch of chains; :func:`~ladder_mcmc.lahmc` with :func:`~ladder_mcmc.sample`'s default
warm-up adapts the step size, mass, trajectory length and momentum refresh. The draws
come back as PyMC reports them: ``mu``, ``tau`` (positive), ``theta_tilde`` and the
deterministic ``theta``, printed by :func:`~ladder_mcmc.diagnostics.summary` and, with
ArviZ, as an ``InferenceData``. posteriordb's reference means, for comparison: theta[0]
6.15, mu 4.41, tau 3.60.

Run: ``python examples/eight_schools_pymc.py`` (``--quick`` for a short run). Needs
``pip install 'ladder_mcmc[pymc]'``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

try:
    import ladder_mcmc  # noqa: F401
except ImportError:  # run from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ladder_mcmc import lahmc, sample
from ladder_mcmc.diagnostics import summary, to_inference_data
from ladder_mcmc.models import from_pymc

Y = np.array([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0])  # estimated treatment effects
SIGMA = np.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0])  # their standard errors


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="100 warm-up + 100 draws")
    parser.add_argument("--seed", type=int, default=8)
    args = parser.parse_args(argv)
    import pymc as pm

    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 5.0)
        tau = pm.HalfCauchy("tau", 5.0)
        theta_tilde = pm.Normal("theta_tilde", 0.0, 1.0, shape=8)
        theta = pm.Deterministic("theta", mu + tau * theta_tilde)
        pm.Normal("y", theta, SIGMA, observed=Y)

    target = from_pymc(model)
    # as pymc.sample starts: PyMC's initial point, jittered by uniform(-1, 1)
    init = target.initial_points(4, np.random.default_rng(args.seed), radius=1.0)
    warmup, draws = (100, 100) if args.quick else (None, 2000)  # None: the default warm-up
    trace = sample(lahmc(target), init, draws, seed=args.seed, warmup=warmup)
    print(summary(trace))
    try:
        idata = to_inference_data(trace)
    except ImportError:
        return 0
    print(idata.posterior)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
