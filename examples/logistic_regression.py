"""Your own model in JAX: a Bayesian logistic regression, sampled with the defaults.

A user writes the log density of one point in ``jax.numpy`` (1000 synthetic rows, 20
covariates, known true coefficients; N(0, 1) priors on the intercept ``alpha`` and the
coefficients ``beta``), hands it to ``from_jax`` with the variables' names, and samples
with ``lahmc(target)`` and ``sample`` (1000 warm-up steps adapt everything). Printed:
the summary under the names ``alpha``, ``beta[0]``, … and how many of the 21 true values
fall in their 90 % intervals (about 19 expected). Needs JAX (``pip install
'ladder_mcmc[jax]'``). ``benchmarks/models.py`` runs the same model against NUTS.

Run: ``python examples/logistic_regression.py`` (``--quick``: a few seconds).
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
import jax.numpy as jnp

from ladder_mcmc import lahmc, sample
from ladder_mcmc.diagnostics import summary
from ladder_mcmc.models import ParameterSpace, from_jax

N_ROWS, N_COEF = 1000, 20


def synthetic_data(seed: int = 0):
    """Design (1000, 20), outcomes (1000,) in {0, 1}, and the true (alpha, beta)."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(N_ROWS, N_COEF))
    alpha, beta = -0.5, rng.normal(0.0, 0.5, size=N_COEF)
    y = (rng.random(N_ROWS) < 1.0 / (1.0 + np.exp(-(alpha + x @ beta)))).astype(float)
    return x, y, np.concatenate([[alpha], beta])


def make_log_density(x, y):
    """log p(alpha, beta | data) up to a constant, at one point z = (alpha, beta) (21,)."""

    def log_density(z):
        eta = z[0] + jnp.dot(x, z[1:])  # numpy data become float64 constants under x64
        return jnp.sum(y * eta - jnp.logaddexp(0.0, eta)) - 0.5 * jnp.dot(z, z)

    return log_density


def make_target(x, y):
    space = ParameterSpace(N_COEF + 1, [("alpha", ()), ("beta", (N_COEF,))])
    return from_jax(make_log_density(x, y), N_COEF + 1, parameters=space)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="100 warm-up + 200 draws")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    x, y, truth = synthetic_data()
    target = make_target(x, y)
    init = target.initial_points(4, np.random.default_rng(args.seed))  # 4 chains
    kw = {"warmup": 100} if args.quick else {}  # default: 1000 warm-up steps
    trace = sample(lahmc(target), init, 200 if args.quick else 2000, seed=args.seed, **kw)
    s = summary(trace)
    print(s)
    inside = (s.q5 <= truth) & (truth <= s.q95)
    print(f"\ntrue values inside their 90 % intervals: {inside.sum()} of {truth.size}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
