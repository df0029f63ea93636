"""Issue 30: kernels on the hard models (funnel, centred eight schools, rough well).

Each run is a suite run (``ladder_mcmc.bench``: the same initial points and seeds as
``ladder-mcmc bench --hard``, the same verdict) plus the bulk ESS of the potential energy
``E(x)`` and, on the funnel, the fraction of draws with ``v < −5`` (exact
``Φ(−5/3) = 4.78 %``) and that indicator's ESS. ``--kernel exact`` judges independent
exact draws (funnel, rough well), ``--kernel nuts`` NumPyro's NUTS. One JSON line per run.
Results: ``results/hard.md``.

``span`` and ``gradient_refined*`` are the package's
:func:`~ladder_mcmc.hamiltonian.span_step.span_lahmc` (``span``: ``M = 8``, ``β = 1``
given; ``span_adapted``: everything adapted; ``gradient_refined``: levels ``0 … ℓ_max``).
The other kernels tried are defined here: :class:`LiftedRefinedLeapfrog` (the
gradient-scaled refinement with a lifted refresh) and :class:`LiftedRadiusRefresh` (a
guided walk on the momentum's radius that pumps the energy up and down).

    python benchmarks/hard_geometry.py --kernel lahmc --model funnel --seeds 0 --backend jax
    python benchmarks/hard_geometry.py --kernel gradient_refined_w2 --model funnel \
        eight_schools_centered --seeds 0 1 2 3 4 --draws 20000 --backend jax
    python benchmarks/hard_geometry.py --kernel exact --model funnel --seeds 0 1 2
"""

from __future__ import annotations

import argparse
import json
import time
import zlib
from typing import Any

import attrs
import numpy as np
from scipy.stats import norm

from ladder_mcmc import lahmc, lifted_lahmc
from ladder_mcmc.arrays import namespace
from ladder_mcmc.bench import SamplerRun, figures_of, get_model, judge, run_kernel, run_nuts
from ladder_mcmc.diagnostics.ess import effective_sample_size, ess_bulk
from ladder_mcmc.hamiltonian import (
    GradientLevelLaw,
    LiftedLeapfrog,
    LiftedQuantileRefresh,
    Metric,
    PhaseState,
    PowerKinetic,
    SpanLeapfrog,
    refined_lahmc,
    span_lahmc,
)
from ladder_mcmc.hamiltonian.geometry import GeometrySwitch
from ladder_mcmc.hamiltonian.leapfrog_family import leapfrog_start
from ladder_mcmc.ladder import (
    AuxiliaryMap,
    AuxiliaryRefresh,
    InnerRefresh,
    Ladder,
    LookAheadRule,
    Refresh,
)
from ladder_mcmc.validation import attrs_converter, positive_finite


def gradient_refined_lahmc(
    target: Any,
    step_size: float | None = None,
    n_steps: int = 8,
    scale: float = 2.0,
    width: float = 1.0,
    max_level: int = 4,
    beta: float = 1.0,
    look_ahead: int = 4,
    inverse_mass: np.ndarray | None = None,
) -> Ladder:
    """The package's :func:`span_lahmc` with levels ``0 … ℓ_max`` only (the refined
    leapfrog, the level drawn from the gradient's size), ``M`` and ``β`` given: what the
    research runs of 2026-11-28 05:10 measured as ``gradient_refined``."""
    return span_lahmc(
        target, step_size, n_steps, beta, scale, width, 0, max_level, look_ahead, inverse_mass
    )


@attrs.frozen(eq=False)
class LiftedRefinedLeapfrog(SpanLeapfrog):
    """:class:`RefinedLeapfrog` on :class:`~ladder_mcmc.hamiltonian.lifted.LiftedPhaseState`:
    the lift rides along, unchanged by the map and the flip."""

    def forward(self, state: PhaseState, alpha: Any) -> PhaseState:
        out = super().forward(state, alpha)
        return attrs.evolve(state, x=out.x, v=out.v, energy=out.energy, grad=out.grad)

    def prepare(self, init: Any, rng: np.random.Generator) -> PhaseState:
        return LiftedLeapfrog(self.target, self.step_size, 1, self.metric).prepare(init, rng)


def lifted_refined_lahmc(
    target: Any,
    step_size: float | None = None,
    n_steps: int = 8,
    scale: float = 2.0,
    width: float = 1.0,
    max_level: int = 4,
    delta: float = 0.06,
    look_ahead: int = 4,
) -> Ladder:
    """:func:`gradient_refined_lahmc` with a lifted quantile refresh of the momentum
    (:class:`~ladder_mcmc.hamiltonian.lifted.LiftedQuantileRefresh`, Gaussian kinetic
    energy): the total energy drifts in sweeps instead of diffusing.

    ``Ladder(AuxiliaryMap(LiftedRefinedLeapfrog, law), LookAheadRule(K),
    InnerRefresh(LiftedQuantileRefresh(δ)) + AuxiliaryRefresh(law))``.
    """
    step_size, _, adapt = leapfrog_start(step_size, None)
    kinetic = PowerKinetic(2.0, np.ones(int(target.dim)))
    law = GradientLevelLaw(step_size, scale, width, 0, max_level, kinetic)
    family = LiftedRefinedLeapfrog(target, step_size, kinetic, n_steps)
    refresh = InnerRefresh(LiftedQuantileRefresh(delta, kinetic)) + AuxiliaryRefresh(law)
    return Ladder(AuxiliaryMap(family, law), LookAheadRule(look_ahead), refresh, adapt=adapt)


@attrs.frozen
class LiftedRadiusRefresh(Refresh):
    """A fresh momentum direction, and a guided walk on the momentum's radius.

    In whitened momentum ``w``, ``t = log |w|²`` has density ``∝ exp(d t / 2 − e^t / 2)``
    independent of the direction ``w / |w|``. Per chain: a new direction from
    ``N(0, M)``; ``t' = t + s δ`` accepted with probability ``min(1, π(t') / π(t))``, else
    ``t`` kept and the lift ``s`` (column 0 of ``LiftedPhaseState.lift``) flipped
    (Gustafson's guided walk, exact for ``π(t) ⊗ uniform(s)``). While ``s = +1`` the
    kinetic energy, hence the total energy, is pumped up step after step, and down while
    ``s = −1``: the total energy drifts instead of diffusing.
    """

    delta: float = attrs.field(converter=attrs_converter(positive_finite, "delta"))
    metric: Any = attrs.field(factory=Metric)

    @property
    def kinetic_energies(self) -> tuple:
        return (self.metric,)

    def __call__(self, state: Any, direction: Any, rng: Any) -> tuple[Any, Any]:
        n, d = state.v.shape
        fresh = self.metric.momentum_of(rng.standard_normal((n, d)))
        u = rng.random(n)
        xp = namespace(state.v, fresh, u)
        with np.errstate(all="ignore"):
            t = xp.log(2.0 * self.metric.kinetic(state.v))
            lift = state.lift[:, 0]
            t_new = t + lift * self.delta
            log_ratio = 0.5 * d * (t_new - t) - 0.5 * (xp.exp(t_new) - xp.exp(t))
            accept = xp.log(u) < log_ratio
            t = xp.where(accept, t_new, t)
            radius = xp.exp(0.5 * t) / xp.sqrt(2.0 * self.metric.kinetic(fresh))
        v = fresh * radius[:, None]
        lifts = xp.concatenate([xp.where(accept, lift, -lift)[:, None], state.lift[:, 1:]], 1)
        return attrs.evolve(state, v=v, lift=lifts), direction


def radius_lahmc(
    target: Any, n_leapfrog: int = 8, delta: float = 0.1, look_ahead: int = 4
) -> Ladder:
    """``Ladder(LiftedLeapfrog(ε, M), LookAheadRule(K), LiftedRadiusRefresh(δ))``: ``ε``
    and the diagonal mass adapted."""
    return Ladder(
        LiftedLeapfrog(target, 1.0, n_leapfrog, Metric()),
        LookAheadRule(look_ahead),
        LiftedRadiusRefresh(delta),
        adapt=frozenset({"step_size", "inverse_mass"}),
    )


def radius_refined_lahmc(
    target: Any, n_steps: int = 8, delta: float = 0.1, scale: float = 2.0, look_ahead: int = 4
) -> Ladder:
    """The gradient-refined ladder with :class:`LiftedRadiusRefresh`."""
    step_size, metric, adapt = leapfrog_start(None, None)
    law = GradientLevelLaw(step_size, scale, 1.0, 0, 4, metric)
    family = LiftedRefinedLeapfrog(target, step_size, metric, n_steps)
    refresh = InnerRefresh(LiftedRadiusRefresh(delta, metric)) + AuxiliaryRefresh(law)
    return Ladder(AuxiliaryMap(family, law), LookAheadRule(look_ahead), refresh, adapt=adapt)


def span_fixed_lahmc(target: Any) -> Ladder:
    """``span_lahmc(target, n_steps=8, beta=1.0)``: ``ε`` and the mass adapted, ``M`` and
    ``β`` as measured on the hard models (a ``--kernel`` for ``ladder-mcmc bench``)."""
    return span_lahmc(target, n_steps=8, beta=1.0)


#: the exact fraction of the funnel's draws with v < −5 (v ~ N(0, 3²))
FUNNEL_NECK = float(norm.cdf(-5.0 / 3.0))

KERNELS = {
    "lahmc": lahmc,
    "refined": refined_lahmc,
    "gradient_refined": gradient_refined_lahmc,
    "gradient_refined_w2": lambda t: gradient_refined_lahmc(t, width=2.0),
    "gradient_refined_w2_m16": lambda t: gradient_refined_lahmc(t, n_steps=16, width=2.0),
    "span": span_fixed_lahmc,
    "span_adapted": span_lahmc,
    "span_beta1": lambda t: span_lahmc(t, beta=1.0),
    "span_m8": lambda t: span_lahmc(t, n_steps=8),
    "span_m4": lambda t: span_lahmc(t, n_steps=4, beta=1.0),
    "gradient_refined_l6": lambda t: gradient_refined_lahmc(t, max_level=6),
    "lifted_refined": lifted_refined_lahmc,
    "lifted_refined_m16": lambda t: lifted_refined_lahmc(t, n_steps=16),
    "lifted_refined_l6": lambda t: lifted_refined_lahmc(t, max_level=6),
    "lifted_refined_c1": lambda t: lifted_refined_lahmc(t, scale=1.0),
    "lifted_refined_d015": lambda t: lifted_refined_lahmc(t, delta=0.15),
    "lifted_refined_w2": lambda t: lifted_refined_lahmc(t, width=2.0),
    "radius": radius_lahmc,
    "radius_d03": lambda t: radius_lahmc(t, delta=0.3),
    "radius_m16": lambda t: radius_lahmc(t, n_leapfrog=16),
    "radius_refined": radius_refined_lahmc,
    "radius_refined_d03": lambda t: radius_refined_lahmc(t, delta=0.3),
    "radius_refined_c1": lambda t: radius_refined_lahmc(t, delta=0.3, scale=1.0),
    "lifted": lifted_lahmc,
    "lifted_m8": lambda t: lifted_lahmc(t, n_leapfrog=8),
    "lifted_d02": lambda t: lifted_lahmc(t, delta=0.2),
    "lifted_a2": lambda t: lifted_lahmc(t, a=2.0),
}


def measure(
    model_name: str,
    kernel: str,
    seed: int,
    chains: int = 4,
    warmup: int = 1000,
    draws: int = 2000,
    backend: str | None = None,
) -> dict:
    """One run of ``kernel`` (a key of :data:`KERNELS`; ``"default"``, what ``sample(target)``
    runs: ``lahmc`` with its geometry switch; ``"nuts"``; or ``"exact"``: as many
    independent exact draws, for the funnel and the rough well) on a suite model."""
    model = get_model(model_name)
    target = model.target()
    moments = model.moments(target)
    seq = np.random.SeedSequence([seed, zlib.crc32(model.name.encode())])
    init_seed, ours_seed, nuts_seed = seq.spawn(3)
    init = model.initial_points(target, chains, np.random.default_rng(init_seed))
    start = time.perf_counter()
    if kernel == "exact":  # independent exact draws: what the verdict gives a perfect sampler
        draws_ = target.sample(draws * chains, np.random.default_rng(ours_seed))
        run = SamplerRun(draws_.reshape(draws, chains, -1), float(draws * chains), 0.0, 0.0)
    elif kernel == "nuts":
        log_p = model.jax_log_density(target)
        run = run_nuts(log_p, init, warmup=warmup, draws=draws, seed=nuts_seed)
    else:  # "default": what sample(target) runs, lahmc with its geometry switch
        sampled = model.jax_target(target) if backend == "jax" else target
        run = run_kernel(
            (lahmc if kernel == "default" else KERNELS[kernel])(sampled),
            init,
            warmup=warmup,
            draws=draws,
            seed=ours_seed,
            backend=backend,
            switch=GeometrySwitch(sampled) if kernel == "default" else None,
        )
    figures = figures_of(run, model.quantities(target, run.positions), moments)
    verdict = judge(figures, warmup_warnings=run.warmup_warnings, step_size=run.step_size)
    out = {
        "model": model.name,
        "kernel": kernel,
        "seed": seed,
        "passed": verdict.passed,
        "rules": list(verdict.rules),
        "max_rhat": round(figures.max_rhat, 4),
        "max_abs_z": round(figures.max_abs_z, 2),
        "worst": figures.worst,
        "max_abs_z_sd": round(figures.max_abs_z_sd, 2),
        "worst_sd": figures.worst_sd,
        "min_ess": round(figures.min_ess, 1),
        "ess_per_1000_grads_with_warmup": round(figures.ess_per_1000_grads_with_warmup, 4),
        "grads": run.grad_evals + run.warmup_grad_evals,
        "step_size": run.step_size,
        "frozen": list(figures.frozen_chains),
        "seconds": round(time.perf_counter() - start, 1),
        "switched": any("switched to" in note for note in run.notes),
    }
    positions = np.asarray(run.positions)
    energy = np.asarray(target.energy(positions.reshape(-1, positions.shape[-1])), dtype=float)
    out["ess_energy"] = round(float(ess_bulk(energy.reshape(positions.shape[:2]))), 1)
    if model.name == "funnel":
        v = positions[..., 0]
        out["ess_neck"] = round(float(effective_sample_size((v < -5.0).astype(float))), 1)
        out["neck_fraction"] = round(float(np.mean(v < -5.0)), 4)
        out["neck_error_pp"] = round(100 * (out["neck_fraction"] - FUNNEL_NECK), 2)
        out["mouth_fraction"] = round(float(np.mean(v > 6.0)), 4)  # exact Φ(−2) = 2.28 %
        out["neck_by_chain"] = [round(float(f), 4) for f in np.mean(v < -5.0, axis=0)]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--kernel", default="lahmc", choices=[*KERNELS, "default", "nuts", "exact"])
    parser.add_argument("--model", nargs="+", default=["funnel"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--warmup", type=int, default=1000)
    parser.add_argument("--draws", type=int, default=2000)
    parser.add_argument("--backend", default=None, choices=[None, "numpy", "jax"])
    args = parser.parse_args()
    for name in args.model:
        for seed in args.seeds:
            row = measure(
                name, args.kernel, seed, args.chains, args.warmup, args.draws, args.backend
            )
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
