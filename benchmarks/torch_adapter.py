"""Overhead of :func:`ladder_mcmc.models.from_torch` per batched call.

For a 3-d Gaussian and a logistic regression (1000 rows, 20 coefficients), at 4 and 64
chains, this script times one call of

* ``bare``: what the adapter computes, by hand: ``vmap(potential)`` on a float64 tensor
  already made, then ``torch.autograd.grad`` of the sum in the points;
* ``+numpy``: the same, from a numpy array and back (``torch.from_numpy``, ``.numpy()``),
  the least any numpy-in, numpy-out target must do;
* ``evaluate``: the adapter's function (adds its input checks);
* ``adapter``: ``CompiledTarget.energy_and_grad`` (adds the shape check and padding),

in alternating rounds (the order rotates every round), keeping the best round of each,
and prints microseconds per call and, in brackets, each method's excess over ``bare``;
the last column is ``torch.func``'s ``vmap(grad_and_value(potential))`` for reference
(the other way to batch a gradient, slower here). Torch's
threads are left as they are unless ``--threads`` is given; ``--clock cpu`` times the
process's CPU time instead of the wall clock (steadier when other processes load the
machine).

Run::

    python benchmarks/torch_adapter.py               # about a minute
    python benchmarks/torch_adapter.py --threads 1 --rounds 9 --seconds 0.3
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from torch.func import grad_and_value, vmap

from ladder_mcmc.models import from_torch


def gaussian():
    prec = torch.from_numpy(np.logspace(0, 2, 3))

    def log_density(x):
        return -0.5 * torch.sum(x * x * prec)

    return log_density, 3


def logistic_regression(rows=1000, cols=20):
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((rows, cols))
    ys = (rng.uniform(size=rows) < 1 / (1 + np.exp(-xs @ rng.standard_normal(cols)))) * 1.0
    xs, ys = torch.from_numpy(xs), torch.from_numpy(ys)

    def log_density(beta):
        eta = xs @ beta
        return torch.sum(ys * eta - torch.nn.functional.softplus(eta)) - 0.5 * beta @ beta

    return log_density, cols


def per_call(f, seconds, clock):
    """Seconds per call of ``f`` by ``clock``, from as many calls as fit in about ``seconds``."""
    f()
    n, start = 0, clock()
    while (elapsed := clock() - start) < seconds:
        for _ in range(10):
            f()
        n += 10
    return elapsed / n


def autograd_route(potential):
    """``x -> (∂E/∂x, E)`` as the adapter computes it: vmap, then autograd of the sum."""
    batched = vmap(potential)

    def run(xt):
        points = xt.detach().requires_grad_(True)
        e = batched(points)
        (g,) = torch.autograd.grad(e.sum(), points)
        return g, e.detach()

    return run


def best_per_call(t, batched, func_route, x, rounds, seconds, clock):
    """Best microseconds per call of each method at the positions ``x``."""
    xt = torch.from_numpy(x)

    def numpy_round_trip():
        g, e = batched(torch.from_numpy(x))
        return e.numpy(), g.numpy()

    methods = {
        "bare": lambda: batched(xt),
        "+numpy": numpy_round_trip,
        "evaluate": lambda: t.evaluate(x),
        "adapter": lambda: t.energy_and_grad(x),
        "grad_and_value": lambda: func_route(xt),
    }
    names = list(methods)
    best = dict.fromkeys(names, np.inf)
    for r in range(rounds):
        for m in names[r % len(names) :] + names[: r % len(names)]:
            best[m] = min(best[m], per_call(methods[m], seconds, clock))
    return {m: 1e6 * s for m, s in best.items()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--seconds", type=float, default=0.2)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument(
        "--clock",
        choices=["wall", "cpu"],
        default="wall",
        help="cpu: the process's CPU time (all its threads), steadier on a loaded machine",
    )
    args = parser.parse_args(argv)
    clock = time.perf_counter if args.clock == "wall" else time.process_time
    if args.threads:
        torch.set_num_threads(args.threads)
    threads = torch.get_num_threads()
    print(f"torch {torch.__version__}, {threads} intra-op threads; µs per call ({args.clock})")
    heads = ("+numpy", "evaluate", "adapter", "grad_and_value")
    print(f"{'model':<18}{'chains':>7}{'bare':>9}" + "".join(f"{h:>17}" for h in heads))
    for name, (log_density, dim) in {
        "gaussian (dim 3)": gaussian(),
        "logistic 1000x20": logistic_regression(),
    }.items():
        t = from_torch(log_density, dim)
        potential = lambda x, f=log_density: -f(x)  # noqa: E731
        batched = autograd_route(potential)
        func_route = vmap(grad_and_value(potential))
        for chains in (4, 64):
            x = np.random.default_rng(1).standard_normal((chains, dim)) * 0.1
            us = best_per_call(t, batched, func_route, x, args.rounds, args.seconds, clock)
            cells = [f"{us[m]:.1f} ({us[m] - us['bare']:+.1f})" for m in list(us)[1:]]
            print(f"{name:<18}{chains:>7}{us['bare']:>9.1f}" + "".join(f"{c:>17}" for c in cells))


if __name__ == "__main__":
    main()
