"""ladder_mcmc: Markov chain Monte Carlo on the ladder of a reversible deterministic map.

Implements and generalises Look-Ahead HMC (Sohl-Dickstein, Mudigonda & DeWeese,
"Hamiltonian Monte Carlo Without Detailed Balance", ICML 2014).

The package is a house of seven rooms, each a subpackage:

* :mod:`ladder_mcmc.ladder` — the abstract ladder: reversible maps, transition
  rules, refreshes, and the kernel made of them (nothing Hamiltonian);
* :mod:`ladder_mcmc.hamiltonian` — HMC as one instance of it: the leapfrog map,
  kinetic energies, momentum refreshes, and the samplers ``hmc`` and ``lahmc``;
* :mod:`ladder_mcmc.engine` — how steps are run: the ragged step written once, its
  numpy and JAX loops, the backend's choice, per-chain random streams, warm-up's runner;
* :mod:`ladder_mcmc.run` — running chains: ``sample``, ``resume``, the trace,
  warm-up, checkpoints, executors;
* :mod:`ladder_mcmc.diagnostics` — what the draws say: autocorrelation, ESS, R̂,
  the rung table, the checks of a run;
* :mod:`ladder_mcmc.verify` — exact and property-based verification;
* :mod:`ladder_mcmc.models` — targets to sample, and real posteriors;

and :mod:`ladder_mcmc.paper` reproduces the paper's experiments. Everything most
users need is importable from here.
"""

import inspect as _inspect
from collections.abc import Callable as _Callable

import attrs as _attrs

from ladder_mcmc.diagnostics.checks import SamplingWarning
from ladder_mcmc.diagnostics.gradient import check_gradient
from ladder_mcmc.diagnostics.summary import summary, to_inference_data
from ladder_mcmc.engine.warmup import Warmup
from ladder_mcmc.hamiltonian.leapfrog import Leapfrog, PhaseState
from ladder_mcmc.hamiltonian.momentum import MomentumRefresh
from ladder_mcmc.hamiltonian.samplers import hmc, lahmc, lifted_lahmc
from ladder_mcmc.hamiltonian.warmup.parameters import apply_warmup
from ladder_mcmc.ladder.kernel import Ladder, LookAhead
from ladder_mcmc.ladder.maps import ReversibleMap
from ladder_mcmc.ladder.refresh import ComposedRefresh, DirectionRefresh, Refresh
from ladder_mcmc.ladder.rules import FLIP, STAY, LookAheadRule, Rule
from ladder_mcmc.models.adapters.jax_models import from_jax
from ladder_mcmc.models.adapters.pymc_models import from_pymc
from ladder_mcmc.models.targets import FunctionTarget, Target
from ladder_mcmc.models.targets import check_target as _check_target
from ladder_mcmc.run.resume import resume as _run_resume
from ladder_mcmc.run.sampling import sample as _run_sample
from ladder_mcmc.run.settings import Checkpoint, Parallel
from ladder_mcmc.run.settings import as_warmup as _as_warmup
from ladder_mcmc.run.trace import Trace

__version__ = "0.1.0"


def _kernel_of(kernel: Ladder | Target) -> Ladder:
    """``kernel``, or ``lahmc(kernel)`` for a target; ``ValueError`` naming both otherwise."""
    if isinstance(kernel, Ladder):
        return kernel
    either = "a Ladder kernel (lahmc(target), LookAhead(map, …)) or "
    return lahmc(_check_target("kernel", kernel, or_else=either))


def _taking_a_target(function: _Callable[..., Trace]) -> _inspect.Signature:
    """``function``'s signature, its ``kernel`` a kernel or a target."""
    signature = _inspect.signature(function, eval_str=True)
    kernel = signature.parameters["kernel"].replace(annotation=Ladder | Target)
    return signature.replace(
        parameters=[kernel if p.name == "kernel" else p for p in signature.parameters.values()]
    )


def sample(kernel, init, n_steps, seed=None, **settings):
    if not isinstance(kernel, Ladder):
        kernel = _kernel_of(kernel)
        warm = _as_warmup(settings.get("warmup"))
        if warm.switch == "auto":  # the default kernel's geometry check (hamiltonian/geometry.py)
            from ladder_mcmc.hamiltonian.geometry import GeometrySwitch

            settings["warmup"] = _attrs.evolve(warm, switch=GeometrySwitch(kernel.map.target))
    return _run_sample(kernel, init, n_steps, seed, **settings)


def resume(path, kernel, n_steps=None, **settings):
    return _run_resume(path, _kernel_of(kernel), n_steps, **settings)


# the top level's sample and resume are run's, with a target in place of the kernel
# running lahmc(target) (the default kernel; sample's with its geometry switch): their
# docs and signatures are run's
for _public, _run in ((sample, _run_sample), (resume, _run_resume)):
    _public.__doc__ = _run.__doc__
    _public.__signature__ = _taking_a_target(_run)


__all__ = [
    # running chains
    "sample",
    "resume",
    "Warmup",
    "Checkpoint",
    "Parallel",
    "Trace",
    "apply_warmup",
    # the samplers
    "hmc",
    "lahmc",
    "lifted_lahmc",
    # kernels of your own: a map, a rule, a refresh
    "Ladder",
    "LookAhead",
    "ReversibleMap",
    "Rule",
    "LookAheadRule",
    "FLIP",
    "STAY",
    "Refresh",
    "ComposedRefresh",
    "DirectionRefresh",
    "Leapfrog",
    "PhaseState",
    "MomentumRefresh",
    # targets
    "Target",
    "FunctionTarget",
    "from_jax",
    "from_pymc",
    # what the draws say
    "summary",
    "to_inference_data",
    "check_gradient",
    "SamplingWarning",
]
