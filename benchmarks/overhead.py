"""Overhead of the generic ladder machinery against a bare textbook HMC.

For the paper's three targets (2-d and 100-d ill-conditioned Gaussians, 2-d rough
well) at 100 chains, ε = 1, M = 10, β = 0.1, this script measures the wall time
per chain-gradient (seconds / (chains × gradient evaluations per chain)) of

* ``bare``: a minimal textbook batched numpy HMC written below (leapfrog,
  Metropolis–Hastings with a momentum flip on rejection, partial momentum
  refresh; nothing else), calling the *same target objects* the library calls;
* ``hmc`` and ``lahmc`` (K = 4) from ``ladder_mcmc``, each under both schedules
  (``ragged``, the default, and ``synchronous``), timed around the whole
  ``sample`` call (trace included). ``ragged`` runs these kernels on the
  ragged schedule's leapfrog fast path with its bookkeeping compiled by numba
  (``ladder_mcmc.drivers.COMPILED``, the ``fast`` extra; the numpy bookkeeping when
  numba is absent); ``ragged numpy`` forces the numpy bookkeeping; ``ragged
  generic`` (``ladder_mcmc.drivers.FAST_PATH = False``) forces the generic driver
  every other kernel (a user's own map, rule or refresh) runs on — the same draws,
  bit for bit,

and prints each one divided by ``bare``. The methods are measured in alternating
rounds (the order rotates every round) and the best of the rounds is kept, so
that load from other processes on a shared machine hits every method alike.

Run::

    python benchmarks/overhead.py            # a few minutes
    python benchmarks/overhead.py --rounds 5 --seconds 0.5

Targets (issues 2 and 7): hmc ≤ 1.2× on every target; ragged lahmc ≤ 1.3× on
all three; the synchronous lahmc floors are about 2.7× (2-d) and 1.9× (rough well).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import importlib.util
import os
import platform
import sys
import time

import numpy as np

try:
    import ladder_mcmc
except ImportError:  # run from a checkout without installing
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))
    import ladder_mcmc
from ladder_mcmc import drivers, hmc, lahmc, sample
from ladder_mcmc.models import IllConditionedGaussian, RoughWell

CHAINS, STEP_SIZE, N_LEAPFROG, BETA, LOOK_AHEAD = 100, 1.0, 10, 0.1, 4


def bare_hmc(target, x, n_steps, eps, n_leapfrog, beta, rng):
    """Textbook persistent HMC on a batch: ``n_steps`` steps; returns the final positions.

    Per step: ``n_leapfrog`` leapfrog steps, accept with probability
    ``min(1, exp(H_old - H_new))``, negate the momentum on rejection, then
    ``v ← √(1-β) v + √β n``. Gradient evaluations per chain: ``n_steps * n_leapfrog``.
    """
    n, dim = x.shape
    energy_and_grad = target.energy_and_grad
    grad = target.grad
    e, g = energy_and_grad(x)
    v = rng.standard_normal((n, dim))
    keep, noise = np.sqrt(1.0 - beta), np.sqrt(beta)
    half = 0.5 * eps
    for _ in range(n_steps):
        x1 = x
        v1 = v - half * g
        for i in range(n_leapfrog):
            x1 = x1 + eps * v1
            if i < n_leapfrog - 1:
                v1 = v1 - eps * grad(x1)
        e1, g1 = energy_and_grad(x1)
        v1 = v1 - half * g1
        h_old = e + 0.5 * np.einsum("ij,ij->i", v, v)
        h_new = e1 + 0.5 * np.einsum("ij,ij->i", v1, v1)
        accept = np.log(rng.random(n)) < h_old - h_new
        col = accept[:, None]
        x = np.where(col, x1, x)
        e = np.where(accept, e1, e)
        g = np.where(col, g1, g)
        v = np.where(col, v1, -v)
        v = keep * v + noise * rng.standard_normal((n, dim))
    return x


def _clock() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def _per_grad(start: tuple[float, float], grads: float) -> tuple[float, float]:
    wall, cpu = _clock()
    return (wall - start[0]) / grads, (cpu - start[1]) / grads


def _time_bare(target, x0, n_steps, seed, n_leapfrog=N_LEAPFROG):
    rng = np.random.default_rng(seed)
    start = _clock()
    bare_hmc(target, x0, n_steps, STEP_SIZE, n_leapfrog, BETA, rng)
    return _per_grad(start, n_steps * n_leapfrog * len(x0))


@contextlib.contextmanager
def _compiled(on: bool):
    """Force the specialised driver's bookkeeping: compiled (numba) or numpy."""
    before = drivers.COMPILED
    drivers.COMPILED = on and importlib.util.find_spec("numba") is not None
    try:
        yield
    finally:
        drivers.COMPILED = before


@contextlib.contextmanager
def _generic_driver():
    """Run the generic ragged driver even where the specialised one applies."""
    before = drivers.FAST_PATH
    drivers.FAST_PATH = False
    try:
        yield
    finally:
        drivers.FAST_PATH = before


def _time_library(kernel, schedule, x0, n_steps, seed):
    if schedule == "ragged generic":
        with _generic_driver():
            return _time_library(kernel, "ragged", x0, n_steps, seed)
    if schedule in ("ragged", "ragged numpy"):
        with _compiled(schedule == "ragged"):
            return _time(kernel, "ragged", x0, n_steps, seed)
    return _time(kernel, schedule, x0, n_steps, seed)


def _time(kernel, schedule, x0, n_steps, seed):
    start = _clock()
    trace = sample(kernel, x0, n_steps, seed=seed, schedule=schedule, warmup=0, checks=False)
    # the sum is taken after the clock stops but is part of the trace's meaning
    wall, cpu = _clock()
    grads = trace.grad_evals.sum()
    return (wall - start[0]) / grads, (cpu - start[1]) / grads


def _numba_version() -> str:
    if importlib.util.find_spec("numba") is None:
        return "not installed (ragged = ragged numpy)"
    import numba

    return numba.__version__


def machine_facts() -> list[str]:
    """Versions, cores, BLAS threads and load: what the figures depend on."""
    lines = [
        f"date (UTC)      : {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M}",
        f"machine         : {platform.machine()} {platform.processor() or ''}".rstrip(),
        f"cpu count       : {os.cpu_count()}",
        f"python          : {platform.python_version()}",
        f"numpy           : {np.__version__}",
        f"ladder_mcmc     : {ladder_mcmc.__version__}",
        f"numba           : {_numba_version()}",
    ]
    try:
        from threadpoolctl import threadpool_info

        blas = [
            f"{i.get('internal_api')} {i.get('version')} threads={i.get('num_threads')}"
            for i in threadpool_info()
        ]
        lines.append(f"BLAS            : {'; '.join(blas) or 'none loaded'}")
    except ImportError:
        names = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
        env = {k: os.environ[k] for k in names if k in os.environ}
        lines.append(f"BLAS threads    : threadpoolctl not installed; env {env or 'unset'}")
    if hasattr(os, "getloadavg"):
        lines.append("load average    : " + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    return lines


TARGETS = {
    "gauss2": ("2-d Gaussian", lambda: IllConditionedGaussian(2)),
    "gauss100": ("100-d Gaussian", lambda: IllConditionedGaussian(100)),
    "roughwell": ("2-d rough well", lambda: RoughWell()),
}


def run(rounds: int, seconds: float, seed: int = 0, which: list[str] | None = None) -> None:
    targets = [(TARGETS[k][0], TARGETS[k][1]()) for k in (which or list(TARGETS))]
    print("\n".join(machine_facts()))
    print(
        f"setting         : {CHAINS} chains, eps={STEP_SIZE}, M={N_LEAPFROG}, beta={BETA}, "
        f"K={LOOK_AHEAD}; best of {rounds} alternating rounds of ~{seconds} s each"
    )
    print(
        "columns         : ns per chain-gradient (best round), wall clock and process CPU "
        "time;\n                  ratio = best ÷ best of bare; 'median paired' = median over "
        "rounds of (method ÷ bare in the same round)"
    )
    print()
    header = (
        f"{'target':15s} {'method':20s} {'wall ns':>8s} {'÷ bare':>7s} {'cpu ns':>8s} "
        f"{'÷ bare':>7s} {'median paired (wall)':>21s}"
    )
    print(header)
    print("-" * len(header))
    summary = []
    for name, target in targets:
        x0 = target.sample(CHAINS, np.random.default_rng(seed))
        methods = {
            "bare": None,
            "hmc ragged": (hmc(target, STEP_SIZE, N_LEAPFROG, BETA), "ragged"),
            "hmc ragged numpy": (hmc(target, STEP_SIZE, N_LEAPFROG, BETA), "ragged numpy"),
            "hmc ragged generic": (hmc(target, STEP_SIZE, N_LEAPFROG, BETA), "ragged generic"),
            "hmc synchronous": (hmc(target, STEP_SIZE, N_LEAPFROG, BETA), "synchronous"),
            "lahmc ragged": (lahmc(target, STEP_SIZE, N_LEAPFROG, BETA, LOOK_AHEAD), "ragged"),
            "lahmc ragged numpy": (
                lahmc(target, STEP_SIZE, N_LEAPFROG, BETA, LOOK_AHEAD),
                "ragged numpy",
            ),
            "lahmc ragged generic": (
                lahmc(target, STEP_SIZE, N_LEAPFROG, BETA, LOOK_AHEAD),
                "ragged generic",
            ),
            "lahmc synchronous": (
                lahmc(target, STEP_SIZE, N_LEAPFROG, BETA, LOOK_AHEAD),
                "synchronous",
            ),
        }
        # calibrate: steps so that one bare run takes about `seconds`
        probe = min(_time_bare(target, x0, 20, seed)[1] for _ in range(3))
        n_steps = max(50, int(seconds / (probe * CHAINS * N_LEAPFROG)))
        names = list(methods)
        for m in names:  # imports and numba's cache load, outside the timings
            if methods[m] is not None:
                _time_library(*methods[m][:1], methods[m][1], x0, 5, seed)
        times: dict[str, list[tuple[float, float]]] = {m: [] for m in names}
        for r in range(rounds):
            order = names[r % len(names) :] + names[: r % len(names)]
            for m in order:
                if methods[m] is None:
                    times[m].append(_time_bare(target, x0, n_steps, seed + r))
                else:
                    kernel, schedule = methods[m]
                    times[m].append(_time_library(kernel, schedule, x0, n_steps, seed + r))
        bare_wall = min(t[0] for t in times["bare"])
        bare_cpu = min(t[1] for t in times["bare"])
        for m in names:
            wall = min(t[0] for t in times[m])
            cpu = min(t[1] for t in times[m])
            paired = float(
                np.median([t[0] / b[0] for t, b in zip(times[m], times["bare"], strict=True)])
            )
            print(
                f"{name:15s} {m:20s} {wall * 1e9:8.1f} {wall / bare_wall:7.2f} "
                f"{cpu * 1e9:8.1f} {cpu / bare_cpu:7.2f} {paired:21.2f}"
            )
            summary.append((name, m, wall / bare_wall, cpu / bare_cpu))
        print(f"{'':15s} ({n_steps} steps per run)")
    print()
    print("ratios to bare (best wall ÷ best wall | best cpu ÷ best cpu):")
    cols = [n for n, _ in targets]
    print(f"{'method':20s} " + " ".join(f"{c:>16s}" for c in cols))
    for m in [m for m in names if m != "bare"]:
        row = [(w, c) for (t, mm, w, c) in summary if mm == m]
        print(f"{m:20s} " + " ".join(f"{w:7.2f} | {c:6.2f}" for w, c in row))


def fixed_costs(rounds: int, seconds: float, seed: int = 0, which: list[str] | None = None):
    """Split the CPU time per map application into a fixed part and a per-leapfrog-step part.

    Each method runs at M = 1 and M = 10 leapfrog steps per map application
    (``hmc``/``lahmc`` as above; ``bare`` with M steps per trajectory). With
    ``t(M)`` the CPU time per application of the map to all chains (a bare
    HMC step, or one ragged iteration), ``t(M) = a + b·M``: ``b`` is the
    integrator's cost per leapfrog step, ``a`` everything else (acceptance,
    refresh, bookkeeping, trace). The ratio per gradient at M = 10 is
    ``(a + 10 b) / (a_bare + 10 b_bare)``, so ``a`` is what bounds it.
    """
    targets = [(TARGETS[k][0], TARGETS[k][1]()) for k in (which or list(TARGETS))]
    print(
        f"fixed cost per map application (all {CHAINS} chains), CPU µs: t(M) = a + b·M "
        f"from M = 1 and M = 10, best of {rounds} alternating rounds"
    )
    header = (
        f"{'target':15s} {'method':20s} {'t(M=1)':>8s} {'t(M=10)':>8s} "
        f"{'a fixed':>8s} {'b per step':>10s} {'a ÷ a_bare':>10s}"
    )
    print(header)
    print("-" * len(header))
    for name, target in targets:
        x0 = target.sample(CHAINS, np.random.default_rng(seed))
        probe = min(_time_bare(target, x0, 20, seed)[1] for _ in range(3))
        n_steps = max(50, int(seconds / (probe * CHAINS * N_LEAPFROG)))
        names = ["bare", "hmc ragged", "lahmc ragged", "lahmc synchronous"]
        best: dict[tuple[str, int], float] = {}
        for r in range(rounds):
            for m in names[r % 4 :] + names[: r % 4]:
                for n_lf in (1, 10):
                    steps = n_steps * (10 // n_lf if m == "bare" else 1)
                    if m == "bare":
                        cpu = _time_bare(target, x0, steps, seed + r, n_lf)[1]
                    else:
                        look = 1 if m.startswith("hmc") else LOOK_AHEAD
                        kernel = lahmc(target, STEP_SIZE, n_lf, BETA, look)
                        schedule = m.split()[1]
                        cpu = _time_library(kernel, schedule, x0, steps, seed + r)[1]
                    per_app = cpu * n_lf * CHAINS * 1e6  # µs per application to all chains
                    key = (m, n_lf)
                    best[key] = min(best.get(key, np.inf), per_app)
        a_bare = (10 * best["bare", 1] - best["bare", 10]) / 9
        for m in names:
            t1, t10 = best[m, 1], best[m, 10]
            a, b = (10 * t1 - t10) / 9, (t10 - t1) / 9
            print(f"{name:15s} {m:20s} {t1:8.1f} {t10:8.1f} {a:8.1f} {b:10.2f} {a / a_bare:10.2f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=7, help="alternating rounds (best kept)")
    parser.add_argument(
        "--seconds", type=float, default=0.25, help="approximate seconds per bare run"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--targets", nargs="+", choices=list(TARGETS), default=None, help="default: all three"
    )
    parser.add_argument(
        "--fixed-costs",
        action="store_true",
        help="also split the time per map application into fixed and per-leapfrog-step parts",
    )
    args = parser.parse_args(argv)
    run(args.rounds, args.seconds, args.seed, args.targets)
    if args.fixed_costs:
        print()
        fixed_costs(args.rounds, args.seconds, args.seed, args.targets)
    return 0


if __name__ == "__main__":
    sys.exit(main())
