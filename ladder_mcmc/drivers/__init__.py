"""How the steps of a run are taken: one driver contract, two schedules.

The ladder kernel (:mod:`ladder_mcmc.ladder`) says what one step of a chain is;
a driver runs those steps for a batch of chains and writes them to the run's
recorder. Every driver keeps the contract written down in
:class:`~ladder_mcmc.drivers.contract.Driver`, and :func:`driver_for` is the one
place that picks one: the *synchronous* schedule (every chain takes its step
together, the paper's step of section 4.2 as written) or the *ragged* schedule
(every chain at its own rung of its own step, so that every map call advances the
whole batch), with a private fast path for the leapfrog look-ahead kernels. Each
chain draws its random numbers from its own stream (:class:`ChainStreams`), so
every driver gives a chain the same numbers for the same step.

Three switches, read when a run starts, change the time a run takes and never its
draws (the third, :data:`JAX_DRIVER`, up to XLA's rounding): :data:`COMPILED`,
:data:`FAST_PATH` and :data:`JAX_DRIVER`.
"""

from ladder_mcmc.drivers.contract import SCHEDULES, Driver, Schedule, driver_for
from ladder_mcmc.drivers.ragged import run_ragged
from ladder_mcmc.drivers.recording import StepRecorder
from ladder_mcmc.drivers.streams import ChainRandom, ChainStreams, root_seed
from ladder_mcmc.drivers.synchronous import run_synchronous

COMPILED: bool | None = None
"""Run the leapfrog fast path's bookkeeping compiled by numba (``pip install
"ladder_mcmc[fast]"``)? ``True`` (whenever numba is importable) or ``False`` decide;
``None`` (the default) leaves it to the environment variable ``LADDER_MCMC_NUMBA``
(``"1"``: always, ``"0"``: never), else to the length of the run (runs of at least
10 000 steps per chain, or any run once the compiled module is loaded). The draws
are the same either way, bit for bit; only the time differs (``benchmarks/results/overhead.md``)."""

FAST_PATH: bool = True
"""Run the ragged schedule's leapfrog look-ahead kernels on their fast path?
``False``: always the generic ragged loop (the numpy fast path's draws bit for bit,
slower; for benchmarks and tests; on a JAX target the default loop is
:data:`JAX_DRIVER`'s, whose draws agree with these to rounding)."""

JAX_DRIVER: bool | None = None
"""Run the leapfrog fast path's kernels on a JAX target (``target.jax_potential``, set by
``from_jax`` and ``from_pymc``) compiled whole by JAX, in blocks of steps
(:mod:`ladder_mcmc.drivers._leapfrog_jax`)? ``True`` or ``False`` decide; ``None`` (the
default) leaves it to the environment variable ``LADDER_MCMC_JAX`` (``0``, ``false``,
``no``, ``off``: never; ``1``, ``true``, ``yes``, ``on`` or unset: on; anything else is
refused). The numpy fast path's draws to rounding (XLA's arithmetic, not numpy's)."""


def jax_loop_compilations() -> int:
    """How many times the JAX-compiled loop (:data:`JAX_DRIVER`) was compiled in this
    process (for benchmarks: warm-up and sampling should share one)."""
    from ladder_mcmc.drivers import _leapfrog_jax

    return _leapfrog_jax.compilations()


__all__ = [
    "jax_loop_compilations",
    "COMPILED",
    "FAST_PATH",
    "JAX_DRIVER",
    "SCHEDULES",
    "ChainRandom",
    "ChainStreams",
    "Driver",
    "Schedule",
    "StepRecorder",
    "driver_for",
    "root_seed",
    "run_ragged",
    "run_synchronous",
]
