"""The one engine's aims, each measured in one run, side by side with its peer.

Sections (``--only`` picks some; all by default):

* ``floor``: the compiled loop's time per gradient against a bare ``jax.lax.fori_loop``
  over the batched leapfrog of the same target (merged kicks: one gradient per step,
  the same number of gradients per chain), the floor of any sampler built on these
  gradients. Fixed kernel ``Ladder(Leapfrog(ε, M = 10), LookAheadRule(4),
  MomentumRefresh(0.5))``, no warm-up; the 100-d Gaussian (``gauss100``, ε = 0.5) and
  eight schools (ε = 0.2); 4 and 64 chains. Both sides timed on a second call (compiled).
* ``iteration``: where the floor's gap goes. The compiled loop's time per iteration (one
  map call on the batch) of fixed kernels with ``M`` = 1, 4 and 16 leapfrog steps per
  rung on the logistic regression and the 100-d Gaussian, 4 chains: the intercept of a
  line through them is the iteration's cost besides the map's gradients; and the number
  of operations (XLA thunks: fusions, copies, loops) in the compiled body of one
  iteration, and of those besides the map (less a bare loop of the map's ``move`` and
  ``log_density``; ``tests/unit/engine/test_hlo_budget.py`` holds that count).
* ``numpy``: a numpy target on the host loop against textbook numpy HMC (a Python loop
  over leapfrog steps, Metropolis accept, full momentum refresh; vectorized over chains),
  both at ε, M fixed, 100 chains, the draws kept, time per gradient: the 100-d and the
  2-d ill-conditioned Gaussians. Ours: ``hmc(target, ε, M, β = 1)`` (identity mass).
* ``custom``: a map a user writes with the array namespace (a 4th-order Yoshida
  leapfrog on a plain ``(chains, 2, dim)`` array, :class:`YoshidaXV`) and a rule a user
  writes (:class:`UserLookAhead`), both compiled, against the built-in ``lahmc`` kernel
  at the same settings on the same JAX target: time per (declared) gradient.
* ``rough``: ``lifted_lahmc(target)`` on the paper's rough well as a JAX target
  (``from_jax``), its defaults (warm-up 1000, ``target_prob`` 0.8) against NumPyro NUTS
  (defaults), 4 chains × (1000 + 2000), 5 seeds: min bulk ESS (of x and x²) per second,
  warm-up included, compile time excluded on both sides; NUTS's best of
  ``chain_method="sequential"``, ``"vectorized"`` and, where the process may use more than
  one core, ``"parallel"`` (4 XLA host devices, set before JAX starts; the package's
  chains one after another also run on the cores), by median ESS/s. Under
  ``taskset -c 0`` (one core) neither side runs chains in parallel.
* ``models``: ``lahmc(target)`` (defaults) against NUTS on eight schools (non-centred)
  and the 1000 × 20 logistic regression, JAX, 4 chains, the same protocol; ESS/s with
  compile time excluded and included.
* ``warmup``: warm-up at sampling speed. ``lahmc(target)`` (defaults, ``backend="jax"``),
  4 chains × (1000 + 1000), on the logistic regression, eight schools and the 100-d
  Gaussian: wall seconds per gradient of warm-up (``trace.warmup.wall_time`` over its
  gradients) and of sampling (``trace.wall_time`` over its), the second of two runs in
  the process (compiled); the compiled warm-up's calls (host round-trips), and its loop's
  iterations (map calls on the batch) over its steps' map calls per chain (1: no chain
  ever waits for another); and sampling's time per gradient over the floor's (``floor``,
  at the adapted median ε and the run's gradients per chain).
* ``many``: the 100-d Gaussian at 64 and 1024 chains, ``lahmc(target)`` against NUTS
  ``chain_method="vectorized"``, ESS/s compile excluded (1024 chains: 500 + 500 steps).
  ``--many-models`` and ``--many-chains`` choose others, e.g. on a GPU
  ``--only many --many-models gauss100 logistic --many-chains 1024 16384``.

Compile time, both sides the same way: the seconds JAX reports through its monitoring
events for tracing, lowering and XLA compilation during the run
(``benchmarks/nuts_peers.py``). Each sampling run (``rough``, ``models``, ``many``) is
made three times per seed. First cold, the persistent compilation cache off, as a
user's first run in a fresh process (NumPyro recompiles its loops at every call, the
package its loops once per kernel structure and target): "compile included" is its wall
time. Then the same run twice more (JAX's in-memory caches cleared before each side's
run): once filling a new persistent cache (not timed), once with it warm: "compile
excluded" is that run's wall time less its compile events (tracing, lowering and the
cache's loads, which JAX times as compilations). Subtracting a cold run's compile
seconds instead flatters NumPyro's sequential chains: each chain compiles while the
one before samples, so part of the subtracted time was sampling too
(``benchmarks/results/engine.md``, 17:00 block). Warm, they still trace and load while
the one before samples, so they stay somewhat flattered.

Needs JAX and NumPyro (``pip install -e ".[peers]"``). Run on a quiet machine::

    python benchmarks/engine.py --out benchmarks/results/engine.md
    python benchmarks/engine.py --quick             # smoke run: 1 seed, short runs
    python benchmarks/engine.py --only floor numpy custom
"""

from __future__ import annotations

import argparse
import datetime
import os
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
#: the CPU's cores this process may use: with more than one, NumPyro's chains may also run
#: in parallel (``chain_method="parallel"``, one XLA host device per chain, set before JAX
#: starts), as the package's chains one after another run on the cores
CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
if CORES > 1 and "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (
        os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=4"
    ).strip()
try:
    import ladder_mcmc  # noqa: F401
except ImportError:  # run from a checkout without installing
    sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))
import attrs  # noqa: E402
import models as model_zoo  # noqa: E402  (benchmarks/models.py)
import nuts_peers  # noqa: E402
from machine import machine_facts  # noqa: E402

from ladder_mcmc import (  # noqa: E402
    Ladder,
    Leapfrog,
    LookAheadRule,
    MomentumRefresh,
    Refresh,
    ReversibleMap,
    Rule,
    hmc,
    lahmc,
    lifted_lahmc,
    sample,
)
from ladder_mcmc.arrays import namespace  # noqa: E402
from ladder_mcmc.bench.warm_cache import persistent_cache  # noqa: E402
from ladder_mcmc.diagnostics import min_bulk_ess, rank_rhat  # noqa: E402
from ladder_mcmc.engine import hlo, jax_loop  # noqa: E402
from ladder_mcmc.models import IllConditionedGaussian, RoughWell, from_jax  # noqa: E402

SECTIONS = ("floor", "iteration", "numpy", "custom", "rough", "models", "many", "warmup")


# ---- a map and a rule a user writes ----------------------------------------------------


@attrs.frozen(eq=False)
class YoshidaXV(ReversibleMap):
    """Yoshida's 4th-order leapfrog on a plain array ``s`` (chains, 2, dim): ``s[:, 0]``
    positions, ``s[:, 1]`` momenta (unit mass); ``F`` negates the momenta. Written once with
    the namespace of its input: it runs on the host loop and compiled."""

    target: object
    step_size: float
    n_steps: int

    W1 = 1.0 / (2.0 - 2.0 ** (1.0 / 3.0))
    W0 = 1.0 - 2.0 * W1

    @property
    def cost(self) -> int:
        return 3 * self.n_steps

    def forward(self, s):
        xp = namespace(s)
        x, v = s[:, 0], s[:, 1]
        for _ in range(self.n_steps):
            for w in (self.W1, self.W0, self.W1):
                eps = w * self.step_size
                v = v - 0.5 * eps * self.target.grad(x)
                x = x + eps * v
                v = v - 0.5 * eps * self.target.grad(x)
        return xp.stack([x, v], axis=1)

    def flip(self, s):
        return s * namespace(s).asarray([1.0, -1.0])[None, :, None]

    def log_density(self, s):
        x, v = s[:, 0], s[:, 1]
        return -self.target.energy(x) - 0.5 * (v * v).sum(axis=1)

    def prepare(self, init, rng):
        x = np.asarray(init, dtype=float)
        return np.stack([x, rng.standard_normal(x.shape)], axis=1)

    def draw(self, s):
        return s[:, 0]


@attrs.frozen
class FullRefreshXV(Refresh):
    """Draw every momentum afresh (``β = 1``) on a ``(chains, 2, dim)`` state."""

    def __call__(self, s, direction, rng):
        xp = namespace(s)
        v = rng.standard_normal(s[:, 1].shape)
        return xp.stack([s[:, 0], v], axis=1), direction


@attrs.frozen
class UserLookAhead(Rule):
    """The look-ahead rule as a user would write it: rungs 1…K, flip otherwise,
    ``C_a = min(1, max_{j ≤ a} r_j)``."""

    k: int = 4

    @property
    def positions(self):
        return tuple(range(1, self.k + 1))

    @property
    def outcomes(self):
        return self.positions

    fallthrough = 0

    def update(self, memory, stage, ratio):
        xp = namespace(memory, ratio)
        running = xp.maximum(memory, ratio)
        return running, xp.minimum(1.0, running)


# ---- timing helpers ----------------------------------------------------------------------


def timed(kernel, init, n, seed, **kw) -> dict:
    """One ``sample`` run: wall seconds, compile seconds (JAX's events), gradients."""
    compiled, count = nuts_peers.compile_totals()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        trace = sample(kernel, init, n, seed=seed, **kw)
        wall = time.perf_counter() - start
    compile_s = nuts_peers.compile_totals()[0] - compiled
    warm = 0.0 if trace.warmup is None else float(np.sum(trace.warmup.grad_evals))
    return {
        "trace": trace,
        "wall": wall,
        "compile": compile_s,
        "compilations": nuts_peers.compile_totals()[1] - count,
        "grads": float(np.sum(trace.grad_evals)),
        "warm_grads": warm,
    }


def warmup_speed(key: str, chains: int, n_warmup: int, n_draws: int, seed: int) -> dict:
    """Seconds per gradient of warm-up and of sampling in one compiled run of
    ``lahmc(target)`` (a first run compiles), and the warm-up's compiled calls."""

    m = model_zoo.model(key)
    target = from_jax(m["log_density"], m["dim"], parameters=m["parameters"])
    init, sample_seed = m["init"](seed, chains)
    kw = {"warmup": n_warmup, "backend": "jax", "checks": False}
    timed(lahmc(target), init, n_draws, sample_seed, **kw)
    calls, iterations, moves = jax_loop.segment_calls()
    init, sample_seed = m["init"](seed, chains)
    r = timed(lahmc(target), init, n_draws, sample_seed, **kw)
    trace = r["trace"]
    eps = float(np.median(np.asarray(trace.warmup.step_size)))
    grads_per_chain = int(round(r["grads"] / chains))
    return {
        "warm": trace.warmup.wall_time / r["warm_grads"],
        "sample": trace.wall_time / r["grads"],
        "floor": bare_floor(m["log_density"], init, eps, grads_per_chain),
        "calls": jax_loop.segment_calls()[0] - calls,
        "waiting": (jax_loop.segment_calls()[1] - iterations)
        / (jax_loop.segment_calls()[2] - moves),
        "compile": r["compile"],
    }


def per_gradient(kernel, init, n, seed, **kw) -> float:
    """Seconds per gradient of a compiled run (a first run compiles)."""
    timed(kernel, init, n, seed, **kw)
    r = timed(kernel, init, n, seed, **kw)
    return r["wall"] / (r["grads"] + r["warm_grads"])


def bare_floor(log_density, init: np.ndarray, eps: float, grads_per_chain: int) -> float:
    """Seconds per gradient of a bare ``fori_loop`` over the batched leapfrog (merged kicks)."""
    import jax
    import jax.numpy as jnp

    grad = jax.vmap(jax.grad(lambda x: -log_density(x)))

    @jax.jit
    def run(x, v):
        def body(_, c):
            x, v = c
            x = x + eps * v
            return x, v - eps * grad(x)

        return jax.lax.fori_loop(0, grads_per_chain, body, (x, v))

    x = jnp.asarray(init)
    v = jnp.zeros_like(x)
    jax.block_until_ready(run(x, v))
    start = time.perf_counter()
    jax.block_until_ready(run(x, v))
    return (time.perf_counter() - start) / (grads_per_chain * init.shape[0])


def loop_body_thunks(kernel, init) -> tuple[dict, dict]:
    """The operations XLA runs per iteration of the compiled loop's body (its top-level
    instructions but tuple plumbing), by kind, and those of a bare loop of the map
    (``hlo.loop_operations``, ``hlo.map_operations``)."""
    ks = kernel.init(init, np.random.default_rng(1))
    return hlo.loop_operations(kernel, ks), hlo.map_operations(kernel, ks)


def textbook_hmc(target, x, n_steps, eps, m, rng) -> float:
    """Seconds per gradient of textbook numpy HMC (full refresh, Metropolis; the draws
    kept, as any sampler keeps them)."""
    start = time.perf_counter()
    draws = np.empty((n_steps,) + x.shape)
    e, g = target.energy(x), target.grad(x)
    for t in range(n_steps):
        v = rng.standard_normal(x.shape)
        h0 = e + 0.5 * (v * v).sum(axis=1)
        x1, v1 = x, v - 0.5 * eps * g
        for i in range(m):
            x1 = x1 + eps * v1
            g1 = target.grad(x1)
            v1 = v1 - (eps if i < m - 1 else 0.5 * eps) * g1
        e1 = target.energy(x1)
        accept = rng.random(x.shape[0]) < np.exp(h0 - e1 - 0.5 * (v1 * v1).sum(axis=1))
        x = np.where(accept[:, None], x1, x)
        e, g = np.where(accept, e1, e), np.where(accept[:, None], g1, g)
        draws[t] = x
    return (time.perf_counter() - start) / (n_steps * m * x.shape[0])


ESS_CHAINS = 1024


def ess_figures(positions, grads, warm_grads, wall, compile_s) -> dict:
    """ESS figures of a run. Over ``ESS_CHAINS`` chains (rank-normalised ESS costs minutes
    at 16,384), ESS and R-hat are those of the first ``ESS_CHAINS`` chains, the ESS scaled
    by chains / ``ESS_CHAINS`` (chains are independent), on both sides alike."""
    chains = positions.shape[1]
    scale = max(chains / ESS_CHAINS, 1.0)
    positions = positions[:, :ESS_CHAINS]
    ess = min_bulk_ess(positions) * scale
    return {
        "ess": ess,
        "per_1000_warm": 1000.0 * ess / (grads + warm_grads),
        "ess_per_s_net": ess / max(wall - compile_s, 1e-9),
        "ess_per_s": ess / wall,
        "rhat": float(np.max(rank_rhat(positions))),
        "compile": compile_s,
    }


# ---- sections ----------------------------------------------------------------------------


def rough_model() -> dict:
    import jax.numpy as jnp

    well = RoughWell()
    k, s1 = np.pi / well.sigma2, well.sigma1

    def log_density(x):
        return -(jnp.sum(x * x) / (2 * s1**2) + jnp.sum(jnp.cos(k * x)))

    def init(seed, chains):
        return np.random.default_rng(seed).uniform(-2, 2, (chains, 2)), seed + 10_000

    return {"log_density": log_density, "dim": 2, "parameters": None, "init": init}


def run_nuts_best(m, seed, chains, n_warmup, n_draws, methods) -> dict:
    import jax

    out = {}
    for method in methods:
        init, _ = m["init"](seed, chains)
        jax.clear_caches()  # as before the package's runs (ours_run)
        log_density = m["log_density"]
        r = nuts_peers.run_nuts(
            None,
            init,
            seed,
            n_warmup=n_warmup,
            n_draws=n_draws,
            chain_method=method,
            potential_fn=lambda x, f=log_density: -f(x),
        )
        wall = r["wall"] + r["compile"]
        out[method] = ess_figures(r["positions"], r["grads"], r["warmup_grads"], wall, r["compile"])
    return out


def ours_run(m, make, seed, chains, n_warmup, n_draws) -> dict:
    """One ``sample(make(target))`` run on a new target: its ESS figures, the backend. The
    initial points and ``sample``'s seed made afresh (a model's seed may be a generator,
    which a run consumes), so that a repeated run draws the same."""
    import jax

    init, sample_seed = m["init"](seed, chains)
    jax.clear_caches()  # nothing compiled before in memory: cold is cold, warm loads all
    compiled = nuts_peers.compile_totals()[0]
    start = time.perf_counter()
    target = from_jax(m["log_density"], m["dim"], parameters=m["parameters"])
    r = timed(make(target), init, n_draws, sample_seed, warmup=n_warmup)
    wall = time.perf_counter() - start
    compile_s = nuts_peers.compile_totals()[0] - compiled
    out = ess_figures(r["trace"].positions, r["grads"], r["warm_grads"], wall, compile_s)
    out["backend"] = r["trace"].backend["name"]
    return out


def compile_in_and_out(cold: dict, warm: dict) -> dict:
    """A run's figures: compile in from its cold run; compile out from the same run
    repeated with the persistent cache warm (its loads counted as compile time)."""
    return {
        **cold,
        "ess_per_s_net": warm["ess_per_s_net"],
        "compile_warm": warm["compile"],
        "ess_change": abs(warm["ess"] / cold["ess"] - 1.0),
    }


def sampling_section(name, m, make, chains, seeds, n_warmup, n_draws, methods, log) -> dict:
    """ESS/s of ``make(target)`` against NUTS (each method), per seed; the medians. Each
    seed's run is made three times, JAX's in-memory caches cleared before each side's:
    cold, the persistent cache off ("compile in"); again, filling a new cache (not timed);
    and again with that cache warm ("compile out": wall time less the compile events
    left, tracing, lowering and the cache's loads)."""
    rows: dict[str, list[dict]] = {"ours": [], **{f"NUTS {k}": [] for k in methods}}
    for seed in seeds:
        runs = []
        directory = tempfile.mkdtemp(prefix="engine_jax_cache_")
        try:
            for cache in (None, directory, directory):
                with persistent_cache(cache):
                    ours = ours_run(m, make, seed, chains, n_warmup, n_draws)
                    nuts = run_nuts_best(m, seed, chains, n_warmup, n_draws, methods)
                runs.append({"ours": ours, **{f"NUTS {k}": v for k, v in nuts.items()}})
        finally:
            shutil.rmtree(directory, ignore_errors=True)
        for side in rows:
            rows[side].append(compile_in_and_out(runs[0][side], runs[2][side]))
        line = f"{name} {chains} chains seed {seed}: " + "; ".join(
            f"{side} ESS/s {rs[-1]['ess_per_s_net']:.3g} (compile in {rs[-1]['ess_per_s']:.3g}), "
            f"R̂ {rs[-1]['rhat']:.3f}, compile {rs[-1]['compile']:.2f} s "
            f"(warm {rs[-1]['compile_warm']:.2f} s), ESS cold/warm {rs[-1]['ess_change']:.1e} apart"
            for side, rs in rows.items()
        )
        log.append(line)
        print(line, flush=True)
    return rows


def median(rows, field):
    return float(np.median([r[field] for r in rows]))


def sampling_table(results: dict, aims: dict) -> list[str]:
    lines = [
        "| model | chains | sampler | ESS/s, compile out | ESS/s, compile in | ESS/1000 grads "
        "(warm-up in) | max R̂ | compile s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for (name, chains), rows in results.items():
        nuts_sides = [s for s in rows if s.startswith("NUTS")]
        best = max(nuts_sides, key=lambda s: median(rows[s], "ess_per_s_net"))
        for side, rs in rows.items():
            lines.append(
                f"| {name} | {chains} | {side}{' (best)' if side == best else ''} | "
                f"{median(rs, 'ess_per_s_net'):.3g} | {median(rs, 'ess_per_s'):.3g} | "
                f"{median(rs, 'per_1000_warm'):.3g} | {max(r['rhat'] for r in rs):.3f} | "
                f"{median(rs, 'compile'):.2f} |"
            )
        out = median(rows["ours"], "ess_per_s_net") / median(rows[best], "ess_per_s_net")
        inn = median(rows["ours"], "ess_per_s") / median(rows[best], "ess_per_s")
        aim = aims.get(name, "")
        lines.append(
            f"| {name} | {chains} | **ours / {best}** | **{out:.2f}×** | **{inn:.2f}×** | – | – | "
            f"{aim} |"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="1 seed, short runs")
    ap.add_argument("--seeds", type=int, default=None, help="seeds 0 .. N-1 (5; quick 1)")
    ap.add_argument("--only", nargs="+", choices=SECTIONS, default=list(SECTIONS))
    ap.add_argument("--out", type=Path, default=None, help="Markdown block on top of this file")
    ap.add_argument(
        "--many-models", nargs="+", default=["gauss100"], help="models of `many` (gauss100)"
    )
    ap.add_argument(
        "--many-chains", nargs="+", type=int, default=[64, 1024], help="chains of `many` (64 1024)"
    )
    args = ap.parse_args(argv)
    peer = nuts_peers.versions()
    if peer is None:
        print("this benchmark needs JAX and NumPyro: pip install -e '.[peers]'")
        return 1
    with persistent_cache(None):  # off, whatever the environment sets, but in sampling_section
        return measure(args, argv, peer)


def measure(args: argparse.Namespace, argv: list[str] | None, peer: str) -> int:
    """The sections ``args`` ask for, printed and written to ``args.out``."""
    import jax

    # compile in: every sampling run cold, as a user's first run in a fresh process; compile
    # out: the same run again with JAX's persistent cache warm (sampling_section)
    n_seeds = args.seeds or (1 if args.quick else 5)
    seeds = range(n_seeds)
    n_warmup, n_draws = (200, 300) if args.quick else (1000, 2000)
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    command = "python benchmarks/engine.py " + " ".join(argv if argv is not None else sys.argv[1:])
    head = [
        f"## {when}: the one engine (`benchmarks/engine.py`)",
        "",
        f"At commit {model_zoo.commit()}. {peer}. Seeds 0–{n_seeds - 1}; compile in: "
        "cold runs (persistent compilation cache off); compile out: each run again with "
        "that cache warm.",
        "",
        "```",
        command.strip(),
        *machine_facts(),
        f"JAX devices     : {jax.devices()}",
        "```",
    ]
    print("\n".join(head), flush=True)
    body: list[str] = []
    log: list[str] = []
    start = time.perf_counter()
    n_time = 200 if args.quick else 1000

    if "floor" in args.only:
        lines = [
            "| model | chains | compiled loop µs/grad | bare fori_loop µs/grad | ratio "
            "(aim ≤ 1.2) |",
            "|---|---|---|---|---|",
        ]
        for key, eps in (("gauss100", 0.5), ("eight_schools", 0.2)):
            m = model_zoo.model(key)
            target = from_jax(m["log_density"], m["dim"])
            for chains in (4, 64):
                init, _ = m["init"](0, chains)
                kernel = Ladder(Leapfrog(target, eps, 10), LookAheadRule(4), MomentumRefresh(0.5))
                ours = per_gradient(kernel, init, n_time, 1, warmup=0, checks=False)
                r = timed(kernel, init, n_time, 1, warmup=0, checks=False)
                per_chain = int(r["grads"] / chains)
                floor = bare_floor(m["log_density"], init, eps, per_chain)
                lines.append(
                    f"| {key} | {chains} | {ours * 1e6:.2f} | {floor * 1e6:.2f} | "
                    f"{ours / floor:.2f} |"
                )
                print(lines[-1], flush=True)
        body += ["", "### Near the machine's limit: time per gradient", "", *lines]

    if "iteration" in args.only:
        lines = [
            "| model | chains | µs per iteration at M = 1, 4, 16 | intercept µs | µs per "
            "leapfrog step | operations per iteration (XLA) | besides the map |",
            "|---|---|---|---|---|---|---|",
        ]
        for key, eps in (("gauss100", 0.3), ("logistic", 0.02)):
            m = model_zoo.model(key)
            target = from_jax(m["log_density"], m["dim"])
            init, _ = m["init"](0, 4)
            per_iteration = []
            for m_steps in (1, 4, 16):
                kernel = Ladder(
                    Leapfrog(target, eps, m_steps), LookAheadRule(4), MomentumRefresh(0.5)
                )
                timed(kernel, init, n_time // 4, 1, warmup=0, checks=False)
                r = timed(kernel, init, n_time, 2, warmup=0, checks=False)
                calls = float(np.sum(r["trace"].n_moves)) / init.shape[0]
                per_iteration.append(r["wall"] / calls)
            slope, intercept = np.polyfit([1, 4, 16], per_iteration, 1)
            kernel = Ladder(Leapfrog(target, eps, 4), LookAheadRule(4), MomentumRefresh(0.5))
            kinds, bare = loop_body_thunks(kernel, init)
            shown = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items(), key=lambda i: -i[1]))
            besides = sum(kinds.values()) - sum(bare.values())
            lines.append(
                f"| {key} | 4 | {', '.join(f'{t * 1e6:.0f}' for t in per_iteration)} | "
                f"{intercept * 1e6:.0f} | {slope * 1e6:.1f} | {sum(kinds.values())}: {shown} | "
                f"{besides} |"
            )
            print(lines[-1], flush=True)
        body += ["", "### Where the time goes: one iteration of the compiled loop", "", *lines]

    if "numpy" in args.only:
        lines = [
            "| target | chains | ε, M | host loop µs/grad | textbook numpy HMC µs/grad | ratio "
            "| aim |",
            "|---|---|---|---|---|---|---|",
        ]
        for dim, eps, m_steps, aim in ((100, 0.5, 10, 1.3), (2, 0.3, 10, 2.0)):
            target = IllConditionedGaussian(dim)
            rng = np.random.default_rng(0)
            init = target.sample(100, rng)
            kernel = hmc(target, eps, m_steps, 1.0)
            ours = per_gradient(kernel, init, n_time, 1, checks=False)
            textbook_hmc(target, init, 20, eps, m_steps, rng)  # warm the caches
            book = textbook_hmc(target, init, n_time, eps, m_steps, rng)
            lines.append(
                f"| IllConditionedGaussian({dim}) | 100 | {eps}, {m_steps} | {ours * 1e6:.2f} | "
                f"{book * 1e6:.2f} | {ours / book:.2f} | ≤ {aim} |"
            )
            print(lines[-1], flush=True)
        body += ["", "### numpy targets: the host loop against textbook numpy HMC", "", *lines]

    if "custom" in args.only:
        m = model_zoo.model("gauss100")
        target = from_jax(m["log_density"], m["dim"])
        lines = [
            "| kernel | chains | µs/grad | ratio to built-in lahmc (aim ≤ 1.2) |",
            "|---|---|---|---|",
        ]
        for chains in (4, 64):
            init, _ = m["init"](0, chains)
            built_in = Ladder(Leapfrog(target, 0.5, 10), LookAheadRule(4), MomentumRefresh(1.0))
            kernels = {
                "built-in lahmc (Leapfrog, LookAheadRule)": built_in,
                "user map YoshidaXV (plain array), user refresh": Ladder(
                    YoshidaXV(target, 0.5, 4), LookAheadRule(4), FullRefreshXV()
                ),
                "user rule UserLookAhead": Ladder(
                    Leapfrog(target, 0.5, 10), UserLookAhead(4), MomentumRefresh(1.0)
                ),
            }
            base = None
            for name, kernel in kernels.items():
                per = per_gradient(kernel, init, n_time, 1, warmup=0, checks=False, backend="jax")
                base = per if base is None else base
                lines.append(f"| {name} | {chains} | {per * 1e6:.2f} | {per / base:.2f} |")
                print(lines[-1], flush=True)
        body += ["", "### Your own map and rule, compiled", "", *lines]

    if "warmup" in args.only:
        lines = [
            "| model | chains | warm-up µs/grad | sampling µs/grad | ratio (aim ≤ 1.2) | "
            "sampling × the floor | warm-up calls | warm-up iterations per map call of a "
            "chain |",
            "|---|---|---|---|---|---|---|---|",
        ]
        w, d = (200, 300) if args.quick else (1000, 1000)
        for key in ("logistic", "eight_schools", "gauss100"):
            rows = [warmup_speed(key, 4, w, d, seed) for seed in seeds]
            warm = float(np.median([r["warm"] for r in rows]))
            samp = float(np.median([r["sample"] for r in rows]))
            floor = float(np.median([r["sample"] / r["floor"] for r in rows]))
            lines.append(
                f"| {key} | 4 | {warm * 1e6:.2f} | {samp * 1e6:.2f} | {warm / samp:.2f} | "
                f"{floor:.2f}× | {rows[0]['calls']} | {rows[0]['waiting']:.2f} |"
            )
            print(lines[-1], flush=True)
        body += ["", f"### Warm-up at sampling speed ({w} + {d} steps, medians over seeds)",
                 "", *lines]  # fmt: skip

    sampling: dict = {}
    aims = {}
    methods = ("sequential", "vectorized") + (("parallel",) if CORES > 1 else ())
    if "rough" in args.only:
        sampling[("rough well (lifted_lahmc)", 4)] = sampling_section(
            "rough", rough_model(), lifted_lahmc, 4, seeds, n_warmup, n_draws, methods, log
        )
        aims["rough well (lifted_lahmc)"] = "aim ≥ 5× (compile out)"
    if "models" in args.only:
        for key, label in (("eight_schools", "eight schools NC"), ("logistic", "logistic 1000×20")):
            sampling[(label, 4)] = sampling_section(
                key, model_zoo.model(key), lahmc, 4, seeds, n_warmup, n_draws, methods, log
            )
            aims[label] = "aim ≥ 1.5× out, ≥ 1× in"
    if "many" in args.only:
        for key in args.many_models:
            m = model_zoo.model(key)
            for chains in args.many_chains:
                w, d = (n_warmup, n_draws) if chains <= 64 else (n_warmup // 2, n_draws // 4)
                sampling[(key, chains)] = sampling_section(
                    key, m, lahmc, chains, seeds, w, d, ("vectorized",), log
                )
        aims["gauss100"] = "aim ≥ 10× (compile out)"
    if sampling:
        body += ["", "### Sampling: ESS per second (medians over seeds)", "",
                 *sampling_table(sampling, aims)]  # fmt: skip
    body += ["", f"{time.perf_counter() - start:.0f} s in all; the package's compiled loops "
             f"were compiled {jax_loop.compilations()} times."]  # fmt: skip
    print("\n".join(body))
    if args.out:
        runs = ["", "Every run:", "", "```text", *log, "```"] if log else []
        old = args.out.read_text() if args.out.exists() else ""
        args.out.write_text("\n".join(head + body + runs) + "\n" + ("\n" + old if old else ""))
        print(f"# written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
