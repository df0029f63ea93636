"""Adapted LAHMC (and adapted HMC, ``K = 1``) against NUTS on the paper's three targets.

Protocol (the one behind the NUTS numbers quoted from issue 6, measured there with
NumPyro 0.22 and BlackJAX 1.7): 4 chains, 1000 warm-up steps and 2000 kept draws per
chain, chains started uniformly on ``(-2, 2)`` per coordinate (Stan's and NumPyro's
default), ``sample(..., warmup=1000, target_prob=p)`` adapting the step size by dual
averaging and a diagonal inverse mass matrix (Stan's windows). Figure of merit:

    min over coordinates i of min(bulk ESS of x_i, bulk ESS of x_i²)   per 1000 gradients,

(:func:`ladder_mcmc.diagnostics.summary.min_bulk_ess`), bulk ESS =
:func:`ladder_mcmc.diagnostics.summary.rank_normalize` then
:func:`ladder_mcmc.diagnostics.effective_sample_size` (split, multi-chain, Geyer),
gradients = all chains' gradient evaluations in the sampling phase (and, in the second
figure, the warm-up's too). ESS from 4 chains is noisy, so every configuration runs
over several seeds and the table gives the median and the range.

The settings (``β``, ``M``, ``K``, target probability) are in :data:`CHOSEN`; how they
were chosen, and the grids (``--grid``), are in ``benchmarks/results/against_nuts.md``. ``--rule``
replaces the fixed ``M`` by the rule of that document: after warm-up,
``M = max(1, round((π/2) / ε))`` — a quarter period of a unit Gaussian per rung in
the adapted metric (warm-up itself runs with the fixed ``M``). ``--power`` adds
rows with a heavier-tailed kinetic energy ``K(v) = Σ|w|^a/a``
(:class:`ladder_mcmc.hamiltonian.kinetic.PowerKinetic`) and its exact partial momentum refresh
(:class:`ladder_mcmc.hamiltonian.momentum.NormalizedMomentumRefresh`); see :data:`POWER`.
``--lifted`` adds rows with the same kinetic energy and, instead of the partial
refresh, the lifted refresh of each coordinate's kinetic-energy quantile
(:class:`ladder_mcmc.hamiltonian.lifted.LiftedQuantileRefresh`); see :data:`LIFTED`.

Run::

    nice -n 10 python benchmarks/against_nuts.py            # 5 seeds, full protocol (~2 min)
    nice -n 10 python benchmarks/against_nuts.py --quick    # 2 seeds, 500 + 1000 (~15 s)
    nice -n 10 python benchmarks/against_nuts.py --targets rough_well --power  # (~2 min)
    nice -n 10 python benchmarks/against_nuts.py --targets rough_well --lifted --no-hmc
    nice -n 10 python benchmarks/against_nuts.py --grid gauss100 --seeds 3
    nice -n 10 python benchmarks/against_nuts.py --targets rough_well --beta 0.3 \\
        --n-leapfrog 30 --look-ahead 4 --target-prob 0.9 --seeds 5
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
import time
from pathlib import Path

import attrs
import numpy as np

try:
    import ladder_mcmc  # noqa: F401
except ImportError:  # run from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ladder_mcmc import Warmup, lahmc, sample
from ladder_mcmc.diagnostics import min_bulk_ess
from ladder_mcmc.hamiltonian import (
    Leapfrog,
    LiftedLeapfrog,
    LiftedQuantileRefresh,
    NormalizedMomentumRefresh,
    PowerKinetic,
    TemperedLeapfrog,
)
from ladder_mcmc.ladder import Ladder, LookAheadRule
from ladder_mcmc.models import IllConditionedGaussian, RoughWell
from ladder_mcmc.run import warmup as run_warmup

#: NUTS (NumPyro 0.22 / BlackJAX 1.7), quoted from issue 6: min bulk ESS per 1000
#: gradients, (sampling phase, warm-up counted).
NUTS = {"gauss2": (140.0, 21.0), "gauss100": (28.0, 5.8), "rough_well": (0.44, 0.28)}

TARGETS = {
    "gauss2": lambda: IllConditionedGaussian(2),
    "gauss100": lambda: IllConditionedGaussian(100),
    "rough_well": lambda: RoughWell(),
}


@attrs.frozen
class Setting:
    """Kernel hyperparameters: refresh ``β``, leapfrog steps per rung ``M``, look-ahead
    ``K``, and the warm-up's target probability of taking the first rung."""

    beta: float
    n_leapfrog: int
    look_ahead: int
    target_prob: float

    def label(self) -> str:
        return f"β={self.beta:g} M={self.n_leapfrog} K={self.look_ahead} p={self.target_prob:g}"


#: The settings of the headline table (benchmarks/results/against_nuts.md, "How the settings were
#: chosen"). Gaussians: full refresh and a quarter period per rung (M ε ≈ π/2 at the
#: adapted ε); rough well: persistent momentum, the best of the grid.
CHOSEN = {
    "gauss2": Setting(beta=1.0, n_leapfrog=1, look_ahead=4, target_prob=0.8),
    "gauss100": Setting(beta=1.0, n_leapfrog=3, look_ahead=4, target_prob=0.8),
    "rough_well": Setting(beta=0.3, n_leapfrog=30, look_ahead=4, target_prob=0.9),
}

#: Small grids (one axis at a time around the chosen point, plus the lead's early points).
GRIDS = {
    "gauss2": [Setting(1.0, m, k, 0.8) for m, k in itertools.product((1, 2, 3, 5), (1, 4))],
    "gauss100": [Setting(1.0, m, 4, 0.8) for m in (2, 3, 4, 6, 10)]
    + [Setting(1.0, 3, 1, 0.8), Setting(1.0, 3, 4, 0.6), Setting(1.0, 3, 4, 0.9)]
    + [Setting(0.5, 3, 4, 0.8), Setting(0.1, 10, 4, 0.8)],
    "rough_well": [Setting(b, 30, 4, 0.8) for b in (0.03, 0.1, 0.3, 1.0)]
    + [Setting(0.3, m, 4, 0.8) for m in (10, 100)]
    + [Setting(0.3, 30, k, 0.8) for k in (1, 8)]
    + [Setting(0.3, 30, 4, p) for p in (0.6, 0.9)]
    + [Setting(1.0, 100, 4, 0.8), Setting(1.0, 200, 4, 0.8)],
}


#: ``--power`` rows: warm-up in two stages — ``POWER_STAGE1`` steps of the target's
#: CHOSEN Gaussian-momentum kernel (step size and diagonal mass, Stan windows), then
#: the rest of the 1000 with the power kinetic (step size only; the package's warm-up
#: would replace a non-Gaussian metric by a Gaussian one when it adapts the mass) —
#: then sampling with ``K(v) = Σ|w|^a/a`` (:class:`ladder_mcmc.hamiltonian.kinetic.PowerKinetic`),
#: the exact partial refresh :class:`ladder_mcmc.hamiltonian.momentum.NormalizedMomentumRefresh`
#: with ``β`` below, ``M`` and ``K`` as given. ``heat > 1`` uses
#: :class:`ladder_mcmc.hamiltonian.tempered.TemperedLeapfrog` instead of the leapfrog.
#: The first version of this page used a = 1.5, β = 1, M = 100 (``--power-a 1.5
#: --power-beta 1 --power-n-leapfrog 100``, bit-identical to its rows).
POWER = {"a": 1.25, "beta": 0.2, "n_leapfrog": 30, "target_prob": 0.8, "heat": 1.0}
POWER_STAGE1 = 0.75

#: ``--lifted`` rows: :func:`run_power` with ``LIFTED["delta"]`` — the kinetic energy of
#: :data:`POWER` (``a``, ``M``, target probability), the map
#: :class:`~ladder_mcmc.hamiltonian.lifted.LiftedLeapfrog`, and as the only refresh the lifted
#: quantile refresh :class:`~ladder_mcmc.hamiltonian.lifted.LiftedQuantileRefresh` with step
#: ``delta`` in the quantile and relative ``jitter`` (0: fixed δ); ``beta > 0`` puts the
#: partial refresh ``NormalizedMomentumRefresh(beta)`` before it; ``target_prob`` is the
#: second warm-up stage's target probability (the power rows use ``POWER["target_prob"]``).
#: ``delta`` chosen on seeds 0–4 (benchmarks/results/against_nuts.md, "Search 2"),
#: ``target_prob`` on seeds 0–4 and confirmed on fresh seeds 10–19 ("Search 3").
LIFTED = {"delta": 0.06, "jitter": 0.0, "beta": 0.0, "target_prob": 0.7}


def run_power(
    target_name: str,
    look_ahead: int,
    seed: int,
    *,
    chains: int = 4,
    n_warmup: int = 1000,
    n_draws: int = 2000,
    a: float = POWER["a"],
    n_leapfrog: int = POWER["n_leapfrog"],
    beta: float | None = None,
    heat: float = POWER["heat"],
    lift_delta: float | None = None,
    lift_jitter: float = LIFTED["jitter"],
    target_prob: float | None = None,
    keep_trace: bool = False,
) -> dict:
    """One run of the power-kinetic LAHMC (see :data:`POWER`); ``keep_trace`` adds the
    :class:`~ladder_mcmc.run.trace.Trace` under ``"trace"`` (for tests).

    ``lift_delta`` set: the lifted kernel of :data:`LIFTED` — ``LiftedLeapfrog`` and
    ``LiftedQuantileRefresh(lift_delta, kin, lift_jitter)``, preceded by the partial
    refresh only if ``beta > 0``. ``beta`` and ``target_prob`` (the second warm-up
    stage's target probability) default to ``POWER``'s, or to ``LIFTED``'s for the lifted
    kernel."""
    defaults = POWER if lift_delta is None else LIFTED
    if beta is None:
        beta = defaults["beta"]
    if target_prob is None:
        target_prob = defaults["target_prob"]
    target = TARGETS[target_name]()
    s = CHOSEN[target_name]
    rng = np.random.default_rng(seed)
    init = rng.uniform(-2.0, 2.0, size=(chains, target.dim))
    start = time.perf_counter()
    gauss = lahmc(target, None, s.n_leapfrog, s.beta, look_ahead=s.look_ahead)
    n1 = int(POWER_STAGE1 * n_warmup)
    gauss, ks, warm1 = run_warmup(
        gauss, gauss.init(init, rng), Warmup(n1, target_prob=s.target_prob), rng
    )
    inverse_mass = np.asarray(gauss.map.metric.inverse_mass, dtype=float)
    kin = PowerKinetic(a, inverse_mass)
    if lift_delta is not None:
        if heat != 1:
            raise ValueError(f"the lifted kernel is not tempered; got heat={heat!r}")
        leapfrog = LiftedLeapfrog(target, warm1.step_size, n_leapfrog, kin)
        refresh = LiftedQuantileRefresh(lift_delta, kin, lift_jitter)
        if beta > 0:
            refresh = NormalizedMomentumRefresh(beta, kin) + refresh
    elif heat == 1:
        leapfrog = Leapfrog(target, warm1.step_size, n_leapfrog, kin)
        refresh = NormalizedMomentumRefresh(beta, kin)
    else:
        leapfrog = TemperedLeapfrog(target, warm1.step_size, n_leapfrog, kin, heat=heat)
        refresh = NormalizedMomentumRefresh(beta, kin)
    kernel = Ladder(leapfrog, LookAheadRule(look_ahead), refresh)
    ks = kernel.init(ks.state.x, rng)
    kernel, ks, warm2 = run_warmup(
        kernel, ks, Warmup(n_warmup - n1, target_prob=target_prob, adapt_mass=False), rng
    )
    trace = sample(kernel, ks, n_draws, seed=rng, warmup=0)
    wall = time.perf_counter() - start
    warm_grads = float(np.sum(warm1.grad_evals) + np.sum(warm2.grad_evals))
    record = {
        "target": target_name,
        "setting": {
            "kinetic_power": a,
            "beta": beta,
            "heat": heat,
            "lift_delta": lift_delta,
            "lift_jitter": lift_jitter if lift_delta is not None else None,
            "n_leapfrog": n_leapfrog,
            "look_ahead": look_ahead,
            "target_prob": target_prob,
        },
        "seed": seed,
        "n_leapfrog_sampling": int(n_leapfrog),
        "step_size": float(warm2.step_size),
        **efficiency(trace, warm_grads, wall),
        "variance": trace.positions.reshape(-1, target.dim).var(axis=0).tolist(),
    }
    if target_name == "rough_well":
        record.update(ripple_spells(trace.positions))
    if keep_trace:
        record["trace"] = trace
    return record


def ripple_spells(x: np.ndarray, period: float = 4.0) -> dict:
    """Free and trapped spells on the rough well, from the draws ``x`` (steps, chains, dim).

    A coordinate is *free* in a step when it ends the step in another ripple cell
    (``floor(x_i / period)``, the barriers of ``cos(π x/2)`` being at multiples of 4)
    than it started. Returns the fraction of free steps and the mean length of the
    free and of the trapped spells (maximal runs; runs cut by the ends of the trace
    are left out).
    """
    cell = np.floor(x / period)
    free = (cell[1:] != cell[:-1]).reshape(x.shape[0] - 1, -1).T  # (coordinate-chains, steps)
    lengths: dict[bool, list[int]] = {True: [], False: []}
    for row in free:
        cuts = np.flatnonzero(row[1:] != row[:-1]) + 1
        for start, end in zip(cuts[:-1], cuts[1:], strict=True):
            lengths[bool(row[start])].append(int(end - start))
    mean = {k: float(np.mean(v)) if v else float("nan") for k, v in lengths.items()}
    return {
        "free_fraction": float(free.mean()),
        "free_spell": mean[True],
        "trapped_spell": mean[False],
    }


def efficiency(trace, warm_grads: float, wall: float) -> dict:
    """The figures every row reports: flips, min bulk ESS, ESS per 1000 gradients."""
    ess = min_bulk_ess(trace.positions)
    grads = float(trace.grad_evals.sum())
    return {
        "flip_fraction": trace.transition_fractions()["F"],
        "min_ess": ess,
        "per_1000": 1000.0 * ess / grads,
        "per_1000_with_warmup": 1000.0 * ess / (grads + warm_grads),
        "grads": grads,
        "warmup_grads": warm_grads,
        "wall": wall,
    }


def run_one(
    target_name: str,
    setting: Setting,
    seed: int,
    *,
    chains: int = 4,
    n_warmup: int = 1000,
    n_draws: int = 2000,
    rule: bool = False,
) -> dict:
    """One adapted run; returns ESS, ESS per 1000 gradients (with and without warm-up) etc."""
    target = TARGETS[target_name]()
    rng = np.random.default_rng(seed)
    init = rng.uniform(-2.0, 2.0, size=(chains, target.dim))
    kernel = lahmc(target, None, setting.n_leapfrog, setting.beta, look_ahead=setting.look_ahead)
    start = time.perf_counter()
    if rule:
        ks = kernel.init(init, rng)
        kernel, ks, warm = run_warmup(
            kernel, ks, Warmup(n_warmup, target_prob=setting.target_prob), rng
        )
        m = max(1, round((math.pi / 2) / warm.step_size))
        kernel = attrs.evolve(kernel, map=attrs.evolve(kernel.map, n_steps=m))
        trace = sample(kernel, ks, n_draws, seed=rng, warmup=0)
    else:
        trace = sample(
            kernel,
            init,
            n_draws,
            seed=seed + 10_000,
            warmup=Warmup(n_warmup, target_prob=setting.target_prob),
        )
        warm, m = trace.warmup, setting.n_leapfrog
    wall = time.perf_counter() - start
    return {
        "target": target_name,
        "setting": attrs.asdict(setting),
        "seed": seed,
        "n_leapfrog_sampling": int(m),
        "step_size": float(warm.step_size),
        **efficiency(trace, float(np.sum(warm.grad_evals)), wall),
    }


def _med_range(values: list[float], fmt: str) -> str:
    v = np.asarray(values)
    return f"{np.median(v):{fmt}} [{v.min():{fmt}}–{v.max():{fmt}}]"


def aggregate(rows: list[dict]) -> dict:
    per = [r["per_1000"] for r in rows]
    perw = [r["per_1000_with_warmup"] for r in rows]
    return {
        "per_1000": _med_range(per, ".3g"),
        "per_1000_with_warmup": _med_range(perw, ".3g"),
        "median_per_1000": float(np.median(per)),
        "median_per_1000_with_warmup": float(np.median(perw)),
        "step_size": float(np.median([r["step_size"] for r in rows])),
        "M": int(np.median([r["n_leapfrog_sampling"] for r in rows])),
        "flips": float(np.median([r["flip_fraction"] for r in rows])),
        "wall": float(np.median([r["wall"] for r in rows])),
        "spells": (
            "free {:.3f}, spells {:.1f} / {:.1f}".format(
                *(float(np.median([r[k] for r in rows])) for k in SPELL_KEYS)
            )
            if all(k in rows[0] for k in SPELL_KEYS)
            else ""
        ),
    }


SPELL_KEYS = ("free_fraction", "free_spell", "trapped_spell")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="2 seeds, 500 warm-up + 1000 draws")
    ap.add_argument("--seeds", type=int, default=None, help="seeds per configuration (5)")
    ap.add_argument("--first-seed", type=int, default=0, help="seeds first, first + 1, ...")
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--warmup", type=int, default=None)
    ap.add_argument("--draws", type=int, default=None)
    ap.add_argument("--targets", nargs="+", choices=sorted(TARGETS), default=list(TARGETS))
    ap.add_argument("--grid", choices=sorted(GRIDS), help="run the grid of one target instead")
    ap.add_argument("--rule", action="store_true", help="M = round((π/2)/ε) after warm-up")
    ap.add_argument("--no-hmc", action="store_true", help="skip the HMC (K = 1) reference rows")
    ap.add_argument("--beta", type=float)
    ap.add_argument("--n-leapfrog", type=int)
    ap.add_argument("--look-ahead", type=int)
    ap.add_argument("--target-prob", type=float)
    ap.add_argument(
        "--power",
        action="store_true",
        help="add rows with the kinetic energy Σ|w|^a/a (PowerKinetic; see POWER)",
    )
    ap.add_argument("--power-a", type=float, default=POWER["a"], help="exponent a of --power")
    ap.add_argument(
        "--power-n-leapfrog", type=int, default=POWER["n_leapfrog"], help="M of --power"
    )
    ap.add_argument("--power-beta", type=float, default=POWER["beta"], help="β of --power")
    ap.add_argument(
        "--power-heat", type=float, default=POWER["heat"], help="tempering heat of --power"
    )
    ap.add_argument(
        "--lifted",
        action="store_true",
        help="add rows with the lifted quantile refresh (lifted_lahmc; see LIFTED)",
    )
    ap.add_argument("--lift-delta", type=float, default=LIFTED["delta"], help="δ of --lifted")
    ap.add_argument(
        "--lift-jitter", type=float, default=LIFTED["jitter"], help="relative jitter of δ"
    )
    ap.add_argument(
        "--lift-beta", type=float, default=LIFTED["beta"], help="partial refresh β of --lifted"
    )
    ap.add_argument(
        "--lift-target-prob",
        type=float,
        default=LIFTED["target_prob"],
        help="second-stage warm-up target probability of --lifted",
    )
    ap.add_argument("--json", type=Path, help="write every run's record here")
    args = ap.parse_args(argv)

    n_seeds = args.seeds or (2 if args.quick else 5)
    n_warmup = args.warmup or (500 if args.quick else 1000)
    n_draws = args.draws or (1000 if args.quick else 2000)
    seeds = range(args.first_seed, args.first_seed + n_seeds)

    jobs: list[tuple[str, str, Setting | int]] = []
    if args.grid:
        jobs = [(args.grid, "LAHMC" if s.look_ahead > 1 else "HMC", s) for s in GRIDS[args.grid]]
    else:
        for name in args.targets:
            s = CHOSEN[name]
            overrides = {
                "beta": args.beta,
                "n_leapfrog": args.n_leapfrog,
                "look_ahead": args.look_ahead,
                "target_prob": args.target_prob,
            }
            s = attrs.evolve(s, **{k: v for k, v in overrides.items() if v is not None})
            jobs.append((name, f"LAHMC K={s.look_ahead}", s))
            if not args.no_hmc and s.look_ahead > 1:
                jobs.append((name, "HMC K=1", attrs.evolve(s, look_ahead=1)))
            if args.power:
                jobs.append((name, "LAHMC pow", args.look_ahead or 4))
                if not args.no_hmc:
                    jobs.append((name, "HMC pow", 1))
            if args.lifted:
                jobs.append((name, "LAHMC lift", -(args.look_ahead or 4)))
                if not args.no_hmc:
                    jobs.append((name, "HMC lift", -1))

    print(
        f"# {args.chains} chains x ({n_warmup} warm-up + {n_draws} draws), {n_seeds} seeds; "
        f"min bulk ESS over x and x² per 1000 gradients: median [min–max]"
        + ("; M by the quarter-period rule" if args.rule else ""),
        flush=True,
    )
    header = (
        f"{'target':<11} {'kernel':<11} {'setting':<26} {'ε':>8} {'M':>4} {'F':>6} "
        f"{'ESS/1000 grads':>24} {'with warm-up':>24} {'wall s':>7} {'NUTS':>13}"
    )
    print(header)
    print("-" * len(header), flush=True)
    records = []
    for name, kname, s in jobs:
        common = {"chains": args.chains, "n_warmup": n_warmup, "n_draws": n_draws}
        if isinstance(s, int) and s < 0:  # lifted rows: s = -K
            pa, pm = args.power_a, args.power_n_leapfrog
            ld, lj, lb = args.lift_delta, args.lift_jitter, args.lift_beta
            lp = args.lift_target_prob
            rows = [
                run_power(
                    name,
                    -s,
                    seed,
                    a=pa,
                    n_leapfrog=pm,
                    beta=lb,
                    lift_delta=ld,
                    lift_jitter=lj,
                    target_prob=lp,
                    **common,
                )
                for seed in seeds
            ]
            label = f"a={pa:g} δ={ld:g} M={pm} K={-s} p={lp:g}"
            if lj:
                label += f" jit={lj:g}"
            if lb:
                label += f" β={lb:g}"
        elif isinstance(s, int):  # power-kinetic rows: s = K
            pa, pm, pb, ph = args.power_a, args.power_n_leapfrog, args.power_beta, args.power_heat
            rows = [
                run_power(name, s, seed, a=pa, n_leapfrog=pm, beta=pb, heat=ph, **common)
                for seed in seeds
            ]
            label = f"a={pa:g} β={pb:g} M={pm} K={s} p={POWER['target_prob']:g}"
            if ph != 1:
                label += f" heat={ph:g}"
        else:
            rows = [run_one(name, s, seed, rule=args.rule, **common) for seed in seeds]
            label = s.label()
        records.extend(rows)
        a = aggregate(rows)
        nuts = NUTS[name]
        print(
            f"{name:<11} {kname:<11} {label:<26} {a['step_size']:>8.3g} {a['M']:>4d} "
            f"{a['flips']:>6.3f} {a['per_1000']:>24} {a['per_1000_with_warmup']:>24} "
            f"{a['wall']:>7.1f} {nuts[0]:>6g} ({nuts[1]:g})"
            + (f"  {a['spells']}" if a["spells"] else ""),
            flush=True,
        )
    if args.json:
        args.json.write_text(json.dumps(records, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
