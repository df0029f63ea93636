"""Warm-up of the Hamiltonian kernels: what ``lahmc`` and its kin leave unset, adapted.

* :mod:`~ladder_mcmc.hamiltonian.warmup.adaptation` — :class:`HMCAdaptation`: what is
  adapted and when (Stan's windows), as the engine's pure pieces;
* :mod:`~ladder_mcmc.hamiltonian.warmup.dual_averaging` — the first step size, and dual
  averaging of ``log ε``;
* :mod:`~ladder_mcmc.hamiltonian.warmup.moments` — a window's (co)variance, step by step, and
  the first mass from the initial gradients;
* :mod:`~ladder_mcmc.hamiltonian.warmup.trajectory` — ChEES length, MEADS's β;
* :mod:`~ladder_mcmc.hamiltonian.warmup.parameters` — read and set a kernel's values;
* :mod:`~ladder_mcmc.hamiltonian.warmup.result` — :class:`WarmupResult`, what it found.
"""

from ladder_mcmc.hamiltonian.warmup.adaptation import HMCAdaptation, check_warmup
from ladder_mcmc.hamiltonian.warmup.parameters import apply_warmup, with_hmc_parameters
from ladder_mcmc.hamiltonian.warmup.result import GroupedWarmup, WarmupResult

__all__ = [
    "GroupedWarmup",
    "HMCAdaptation",
    "WarmupResult",
    "apply_warmup",
    "check_warmup",
    "with_hmc_parameters",
]
