"""The suite's models: each a target, its reference moments, its initial points, and its
JAX log density.

* the paper's targets (section 5): ``gauss2`` and ``gauss100``, the 2-d and 100-d
  ill-conditioned Gaussians (condition number ``10⁶``), and ``rough_well``;
* ``funnel``: Neal's funnel, 10-d, ``s = 3``;
* ``eight_schools_centered``: centred eight schools, exact moments by quadrature;
* every bundled posteriordb posterior (:mod:`ladder_mcmc.models.posteriors`), with
  posteriordb's reference means, standard deviations and MCSEs of the constrained
  parameters.

The **default set** is the models a correct sampler passes at the suite's sizes
(``lahmc`` does; NUTS too, bar an R̂ of 1.011 on ``sblrc`` at the quick sizes): every
model but the three **hard** ones (:data:`HARD`), the rough
well, the funnel and centred eight schools, on which every sampler tried, NUTS included,
fails R̂ at these sizes. They run when named, or with ``ladder-mcmc bench --hard``.

Synthetic targets report their coordinates (exact moments) and start uniformly on
``(−2, 2)`` per coordinate; posteriors report their constrained parameters and start
uniformly on ``(−0.5, 0.5)`` per unconstrained coordinate (Stan's ``init=0.5``: Stan's
default 2 puts about half of the ``arma`` chains where its recursion overflows).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import attrs
import numpy as np

from ladder_mcmc.bench.jax_densities import jax_log_density
from ladder_mcmc.bench.moments import (
    Moments,
    coordinate_names,
    eight_schools_moments,
    rough_well_moments,
)
from ladder_mcmc.models import posteriors
from ladder_mcmc.models.adapters import from_jax
from ladder_mcmc.models.exact_targets import IllConditionedGaussian, NealsFunnel, RoughWell
from ladder_mcmc.models.posteriors.eight_schools import EightSchoolsCentered


def _coordinates(target: Any, positions: np.ndarray) -> np.ndarray:
    return np.asarray(positions, dtype=float)


def _constrained(target: Any, positions: np.ndarray) -> np.ndarray:
    return target.constrain(np.asarray(positions, dtype=float))


@attrs.frozen(eq=False)
class SuiteModel:
    """A model of the suite.

    Attributes
    ----------
    name : str
        Its key in :data:`SUITE` (``"gauss2"``, ``"kidiq"``, …).
    title : str
        What it is, in a few words.
    build : callable
        ``() -> target``: a new target (numpy energies, written with the namespace of
        their input, so that they run on the JAX loop too).
    moments : callable
        ``target -> Moments``: the reference moments of its quantities.
    quantities : callable
        ``(target, positions (steps, chains, dim)) -> (steps, chains, n)``: what is
        compared with the moments (coordinates, or constrained parameters).
    init_radius : float
        Initial points are uniform on ``(−r, r)`` per (unconstrained) coordinate.
    posteriordb : str or None
        The posteriordb name, for a posterior.
    hard : bool
        Not in the default set: a correct sampler, NUTS included, fails it at the
        suite's sizes.
    """

    name: str
    title: str
    build: Callable[[], Any]
    moments: Callable[[Any], Moments]
    quantities: Callable[[Any, np.ndarray], np.ndarray] = _coordinates
    init_radius: float = 2.0
    posteriordb: str | None = None
    hard: bool = False

    def target(self) -> Any:
        """A new target of the model."""
        return self.build()

    def initial_points(self, target: Any, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` initial points (n, dim), uniform on ``(−r, r)`` per coordinate."""
        return rng.uniform(-self.init_radius, self.init_radius, size=(n, target.dim))

    def jax_log_density(self, target: Any) -> Callable[[Any], Any]:
        """``log p`` of one point in ``jax.numpy``
        (:func:`~ladder_mcmc.bench.jax_densities.jax_log_density`)."""
        return jax_log_density(target)

    def jax_target(self, target: Any) -> Any:
        """The target as a JAX target (:func:`~ladder_mcmc.models.from_jax` of its log
        density): what ``sample`` runs inside the compiled loop by itself."""
        return from_jax(
            self.jax_log_density(target), target.dim, parameters=getattr(target, "parameters", None)
        )


def _gaussian(dim: int) -> SuiteModel:
    def moments(t: IllConditionedGaussian) -> Moments:  # normal: kurtosis 3
        return Moments.exact(
            coordinate_names(t.dim), t.mean, t.variances, kurtosis=np.full(t.dim, 3.0)
        )

    return SuiteModel(
        f"gauss{dim}",
        f"{dim}-d ill-conditioned Gaussian, condition 1e6 (paper)",
        lambda: IllConditionedGaussian(dim),
        moments,
    )


def _funnel() -> SuiteModel:
    def moments(t: NealsFunnel) -> Moments:
        # v ~ N(0, s²): kurtosis 3; x_i | v ~ N(0, e^v): E x⁴ = 3 E e^{2v} = 3 e^{2s²} over
        # (E x²)² = e^{s²}, kurtosis 3 e^{s²} (≈ 24 000 for s = 3)
        kurtosis = np.r_[3.0, np.full(t.dim - 1, 3.0 * np.exp(t.scale**2))]
        return Moments.exact(
            ("v",) + coordinate_names(t.dim - 1), t.mean, t.variance, kurtosis=kurtosis
        )

    return SuiteModel(
        "funnel", "Neal's funnel, 10-d, s = 3", lambda: NealsFunnel(10), moments, hard=True
    )


def _centered_eight_schools() -> SuiteModel:
    def moments(t: EightSchoolsCentered) -> Moments:
        return eight_schools_moments(t.param_names, t.y, t.sigma)

    return SuiteModel(
        "eight_schools_centered",
        "eight schools, centred (a funnel)",
        EightSchoolsCentered.load,
        moments,
        _constrained,
        init_radius=0.5,
        hard=True,
    )


def _posterior(name: str) -> SuiteModel:
    data, model = name.split("-", 1)
    key = "eight_schools_noncentered" if data == "eight_schools" else data

    def moments(t: Any) -> Moments:
        return Moments.from_reference(t.reference)

    return SuiteModel(
        key,
        f"posteriordb {model}",
        lambda: posteriors.load(name),
        moments,
        _constrained,
        init_radius=0.5,
        posteriordb=name,
    )


SUITE: dict[str, SuiteModel] = {
    m.name: m
    for m in (
        _gaussian(2),
        _gaussian(100),
        SuiteModel(
            "rough_well",
            "2-d rough well (paper)",
            RoughWell,
            rough_well_moments,
            hard=True,
        ),
        _funnel(),
        _centered_eight_schools(),
        *(_posterior(name) for name in posteriors.names()),
    )
}
"""Every model of the suite, by name, in the order of the report."""


HARD: tuple[str, ...] = tuple(name for name, m in SUITE.items() if m.hard)
"""The hard models: every sampler tried, NUTS included, fails R̂ on them at the suite's
sizes; not in the default set."""
DEFAULT: tuple[str, ...] = tuple(name for name, m in SUITE.items() if not m.hard)
"""The default set: the models a correct sampler passes at the suite's sizes."""


def model_names() -> tuple[str, ...]:
    """The names of :data:`SUITE` (the hard models included)."""
    return tuple(SUITE)


def get_model(name: str) -> SuiteModel:
    """The model ``name``: a key of :data:`SUITE` or a posteriordb name.

    Raises
    ------
    ValueError
        For an unknown name, listing the known ones.
    """
    if name in SUITE:
        return SUITE[name]
    for model in SUITE.values():
        if model.posteriordb == name:
            return model
    raise ValueError(f"unknown suite model {name!r}; known: {', '.join(SUITE)}")


def select(names: Sequence[str] | None) -> tuple[SuiteModel, ...]:
    """The models named (:func:`get_model`), each once, in the order given; the default
    set (:data:`DEFAULT`) for None."""
    if names is None:
        return tuple(SUITE[n] for n in DEFAULT)
    if isinstance(names, str):
        names = [names]
    chosen = {get_model(n).name: get_model(n) for n in names}
    if not chosen:
        raise ValueError("models: name at least one model")
    return tuple(chosen.values())


__all__ = ["DEFAULT", "HARD", "SUITE", "SuiteModel", "get_model", "model_names", "select"]
