"""The samplers built on the leapfrog ladder: HMC, Look-Ahead HMC and lifted LAHMC.

* :func:`lahmc` — Look-Ahead HMC (paper, section 4): the leapfrog ladder, the
  look-ahead rule and the partial momentum refresh;
* :func:`hmc` — standard (persistent when ``β < 1``) HMC (section 3.4):
  :func:`lahmc` with one rung;
* :func:`lifted_lahmc` — a power kinetic energy and the lifted quantile refresh
  (:mod:`ladder_mcmc.hamiltonian.lifted`), for rough targets.

Each returns a :class:`~ladder_mcmc.ladder.kernel.Ladder` of parts that can also be
put together by hand.
"""

from __future__ import annotations

import numpy as np

from ladder_mcmc.hamiltonian.jitter import JitteredLeapfrog, StepSizeJitter
from ladder_mcmc.hamiltonian.jittered_length import JitteredLengthLeapfrog, LengthJitter
from ladder_mcmc.hamiltonian.kinetic import PowerKinetic
from ladder_mcmc.hamiltonian.leapfrog import Leapfrog
from ladder_mcmc.hamiltonian.lifted import LiftedLeapfrog, LiftedQuantileRefresh
from ladder_mcmc.hamiltonian.metrics import Metric
from ladder_mcmc.hamiltonian.momentum import MomentumRefresh
from ladder_mcmc.ladder.kernel import Ladder
from ladder_mcmc.ladder.refresh import Refresh
from ladder_mcmc.ladder.rules import LookAheadRule
from ladder_mcmc.models.targets import Target
from ladder_mcmc.validation import positive_finite, positive_int

#: the starting values of what :func:`lahmc` and :func:`hmc` are not given (warm-up
#: adapts them; ``sample(..., warmup=0)`` runs them as they are, with a warning)
STARTING_VALUES = {"step_size": 1.0, "n_leapfrog": 1, "beta": 1.0}


def lahmc(
    target: Target,
    step_size: float | None = None,
    n_leapfrog: int | None = None,
    beta: float | None = None,
    look_ahead: int = 4,
    inverse_mass: np.ndarray | None = None,
    jitter: float = 0.0,
    length_jitter: float | None = None,
) -> Ladder:
    """Look-Ahead HMC (paper, section 4): leapfrog ladder, look-ahead rule, momentum refresh.

    Every tuning argument is optional: what is left unset (None) is adapted by the
    warm-up :func:`~ladder_mcmc.sample` runs by default (``docs/sampling.md``), and what
    is given is kept as given. The kernel records which is which in
    :attr:`~ladder_mcmc.ladder.kernel.Ladder.adapt`.

    Parameters
    ----------
    target : Target
        Energy and gradient.
    step_size : float, optional
        Leapfrog step ``ε`` (adapted: dual averaging of the first-rung probability).
    n_leapfrog : int, optional
        Leapfrog steps per rung ``M``; with ``length_jitter``, the centre of each step's
        jittered length (adapted: a ChEES criterion on the chains' covariance).
    beta : float in (0, 1], optional
        Momentum refresh ``β`` per step, 1 = full refresh (adapted: MEADS's damping).
    look_ahead : int
        ``K``, the most rungs tried before a momentum flip (default 4, the paper's; not
        adapted: ``docs/sampling.md`` says what it costs and gains with adapted settings).
    inverse_mass : array, optional
        Diagonal (vector) or dense inverse mass matrix (adapted: the chains' variances).
        A given ``step_size`` was chosen for a mass: with ``step_size`` given, the mass is
        not adapted (the identity, unless ``inverse_mass`` is given too), so that the step
        keeps its meaning.
    jitter : float in [0, 1)
        ``j > 0``: each chain's step is ``ε s`` with ``s`` drawn uniformly on
        ``[1 − j, 1 + j]`` afresh every step (:mod:`ladder_mcmc.hamiltonian.jitter`),
        with a fixed ``M``. ``0`` (default): no step-size jitter.
    length_jitter : float in [0, 1], optional
        ``j > 0``: each chain draws its number of leapfrog steps afresh every step,
        uniformly on ``M − w … M + w``, ``w = ⌊j (M − 1)⌋``
        (:mod:`ladder_mcmc.hamiltonian.jittered_length`), which breaks the resonances of
        a fixed trajectory length. ``0``: every rung has ``M`` steps. Default: 1 when
        ``n_leapfrog`` is left to warm-up (and no step-size ``jitter``: the two do not
        combine), else 0 — a given ``M`` is kept exactly.

    Raises
    ------
    ValueError
        A value out of its range, or both ``jitter`` and ``length_jitter`` above 0.

    Examples
    --------
    >>> import numpy as np
    >>> from ladder_mcmc import lahmc, sample
    >>> from ladder_mcmc.models import IllConditionedGaussian
    >>> target = IllConditionedGaussian(2)
    >>> kernel = lahmc(target)
    >>> sorted(kernel.adapt)
    ['beta', 'inverse_mass', 'n_leapfrog', 'step_size']
    >>> trace = sample(kernel, target.sample(4, np.random.default_rng(0)), 200, seed=1, warmup=200)
    >>> trace.positions.shape
    (200, 4, 2)
    """
    positive_int("look_ahead", look_ahead)
    given = {"step_size": step_size, "n_leapfrog": n_leapfrog, "beta": beta}
    adapt = {name for name, value in given.items() if value is None}
    if inverse_mass is None and step_size is None:  # a given ε was chosen for a given mass
        adapt.add("inverse_mass")
    values = {name: STARTING_VALUES[name] if v is None else v for name, v in given.items()}
    step_size = positive_finite("step_size", values["step_size"])
    m = positive_int("n_leapfrog", values["n_leapfrog"])
    if (
        isinstance(jitter, bool)
        or not isinstance(jitter, (int, float, np.integer, np.floating))
        or not 0 <= jitter < 1
    ):
        raise ValueError(f"jitter must be a number in [0, 1), got {jitter!r}")
    if length_jitter is None:  # jitter a length warm-up chooses; keep a given one exact
        length_jitter = 1.0 if jitter == 0 and n_leapfrog is None else 0.0
    if (
        isinstance(length_jitter, bool)
        or not isinstance(length_jitter, (int, float, np.integer, np.floating))
        or not 0 <= length_jitter <= 1
    ):
        raise ValueError(f"length_jitter must be a number in [0, 1], got {length_jitter!r}")
    if jitter > 0 and length_jitter > 0:
        raise ValueError(
            f"jitter={jitter!r} and length_jitter={length_jitter!r}: a step-size jitter and a "
            "length jitter do not combine; pass one of them as 0"
        )
    metric = Metric(inverse_mass)
    refresh: Refresh = MomentumRefresh(values["beta"], metric)
    if jitter > 0:
        leapfrog: Leapfrog = JitteredLeapfrog(target, step_size, m, metric)
        refresh = refresh + StepSizeJitter(jitter)
    elif length_jitter > 0:
        leapfrog = JitteredLengthLeapfrog(target, step_size, m, metric)
        refresh = refresh + LengthJitter(m, length_jitter)
    else:
        leapfrog = Leapfrog(target, step_size, m, metric)
    return Ladder(leapfrog, LookAheadRule(look_ahead), refresh, adapt=frozenset(adapt))


def hmc(
    target: Target,
    step_size: float | None = None,
    n_leapfrog: int | None = None,
    beta: float | None = None,
    inverse_mass: np.ndarray | None = None,
    jitter: float = 0.0,
    length_jitter: float | None = None,
) -> Ladder:
    """Standard (persistent when ``β < 1``) HMC: :func:`lahmc` with ``look_ahead = 1``.

    A momentum flip on rejection, then the partial refresh (paper, section 3.4); every
    other argument as for :func:`lahmc` (unset ones adapted in warm-up).
    """
    return lahmc(
        target,
        step_size,
        n_leapfrog,
        beta,
        look_ahead=1,
        inverse_mass=inverse_mass,
        jitter=jitter,
        length_jitter=length_jitter,
    )


def lifted_lahmc(
    target: Target,
    step_size: float | None = None,
    n_leapfrog: int = 30,
    delta: float = 0.06,
    look_ahead: int = 4,
    a: float = 1.25,
    inverse_mass: np.ndarray | None = None,
) -> Ladder:
    """Lifted LAHMC: power kinetic energy, look-ahead rule, lifted quantile refresh.

    ``Ladder(LiftedLeapfrog(target, ε, M, kin), LookAheadRule(K),
    LiftedQuantileRefresh(δ, kin))`` with ``kin = PowerKinetic(a, inverse_mass)``:
    the paper's look-ahead ladder (section 4) on the leapfrog of
    ``H = E(x) + Σ_i |w_i|^a / a``, ``w = v √m``, with each momentum coordinate's
    kinetic-energy quantile moved in persistent sweeps of ``δ`` per step instead of a
    partial refresh. Meant for rough targets, where a coordinate crosses a barrier only
    while its energy is above it. The defaults are the setting chosen on the paper's
    rough well (``benchmarks/results/against_nuts.md``; there with ``M = 30`` and
    ``sample(..., warmup=Warmup(W, target_prob=0.7))``); on smooth targets
    :func:`~ladder_mcmc.hamiltonian.samplers.lahmc` is as good and cheaper per step.

    Parameters
    ----------
    target : Target
        Energy and gradient.
    step_size : float, optional
        Leapfrog step ``ε`` in the whitened coordinates ``x / √m``; unset: adapted in
        warm-up (``sample`` runs one by default), starting from 1.
    n_leapfrog : int
        Leapfrog steps per rung ``M`` (not adapted: the criterion of
        :mod:`ladder_mcmc.run.trajectory` assumes a Gaussian momentum).
    delta : float in (0, 1]
        Quantile step of the lifted refresh per ladder step (a sweep takes ``1/δ`` steps).
    look_ahead : int
        ``K``, the most rungs tried before a momentum flip.
    a : float in (1, 2]
        Exponent of the kinetic energy (2: Gaussian momentum; smaller: heavier tails).
    inverse_mass : array (dim,), optional
        Diagonal inverse mass ``m``; unset: ones of ``target.dim`` to start, adapted in
        warm-up within the same family (unless ``step_size`` is given: then ones, kept).

    Raises
    ------
    ValueError
        Bad ``n_leapfrog``, ``look_ahead``, ``delta``, ``a`` or ``inverse_mass``; or no
        ``inverse_mass`` for a target without ``dim``.

    Examples
    --------
    >>> import numpy as np
    >>> from ladder_mcmc import Warmup, lifted_lahmc, sample
    >>> from ladder_mcmc.models import RoughWell
    >>> kernel = lifted_lahmc(RoughWell())
    >>> trace = sample(kernel, np.zeros((4, 2)), 100, seed=0, warmup=Warmup(100, target_prob=0.7))
    >>> trace.positions.shape
    (100, 4, 2)
    """
    positive_int("look_ahead", look_ahead)
    positive_int("n_leapfrog", n_leapfrog)
    adapt = {"step_size"} if step_size is None else set()
    if inverse_mass is None and step_size is None:  # a given ε was chosen for a given mass
        adapt.add("inverse_mass")
    step_size = positive_finite(
        "step_size", STARTING_VALUES["step_size"] if step_size is None else step_size
    )
    if inverse_mass is None:
        dim = getattr(target, "dim", None)
        if dim is None:
            raise ValueError(
                f"inverse_mass is needed: the target {type(target).__name__} does not "
                f"say its dimension (dim=None)"
            )
        inverse_mass = np.ones(int(dim))
    kinetic = PowerKinetic(a, inverse_mass)
    return Ladder(
        LiftedLeapfrog(target, step_size, n_leapfrog, kinetic),
        LookAheadRule(look_ahead),
        LiftedQuantileRefresh(delta, kinetic),
        adapt=frozenset(adapt),
    )
