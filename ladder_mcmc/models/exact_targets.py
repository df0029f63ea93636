"""Targets with exact draws and moments: the paper's (section 5), the ill-conditioned
Gaussian and the rough well; a product of gammas; Neal's funnel, a multiscale target.

Each has ``energy``, ``grad`` (and ``energy_and_grad`` where cheaper), ``dim``,
``sample(n, rng)`` (exact draws) and its moments where they are known in closed form,
written against the namespace of its input (:mod:`ladder_mcmc.arrays`) so that the
compiled loop runs them.
"""

from __future__ import annotations

import attrs
import numpy as np

from ladder_mcmc.arrays import namespace
from ladder_mcmc.models.parameters import ParameterSpace
from ladder_mcmc.validation import attrs_validator, positive_finite, positive_int

__all__ = ["GammaTarget", "IllConditionedGaussian", "NealsFunnel", "RoughWell"]


@attrs.frozen
class IllConditionedGaussian:
    """Zero-mean Gaussian with diagonal covariance, eigenvalues log-spaced in ``[1, 10^c]``.

    The paper's first two targets (section 5): ``dim = 2`` and ``dim = 100``
    with ``c = 6``; figure 3 uses ``dim = 2``, ``c = 5``.
    ``E(x) = ½ Σ_i x_i² / σ_i²`` with ``σ_i² = 10^{c i/(dim-1)}``.

    Parameters
    ----------
    dim : int
        Dimension.
    log_condition : float
        ``c = log10`` of the condition number of the covariance.
    """

    dim: int = attrs.field(validator=attrs_validator(positive_int))
    log_condition: float = attrs.field(default=6.0)
    variances: np.ndarray = attrs.field(init=False, eq=False, repr=False)
    precisions: np.ndarray = attrs.field(init=False, eq=False, repr=False)

    @log_condition.validator
    def _check_log_condition(self, _attr, value):
        if not (np.isfinite(value) and value >= 0):
            raise ValueError(f"log_condition must be finite and >= 0, got {value!r}")

    def __attrs_post_init__(self) -> None:
        var = np.logspace(0.0, self.log_condition, self.dim)
        object.__setattr__(self, "variances", var)
        object.__setattr__(self, "precisions", 1.0 / var)

    def energy(self, x: np.ndarray) -> np.ndarray:
        # row by row (einsum), never a matrix product: BLAS rounds a row differently
        # with other batch sizes, and a chain's arithmetic must not depend on its batch
        xp = namespace(x, self.precisions)
        return 0.5 * xp.einsum("ij,ij->i", x, x * self.precisions)

    def grad(self, x: np.ndarray) -> np.ndarray:
        return x * self.precisions

    def energy_and_grad(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        xp = namespace(x, self.precisions)
        g = x * self.precisions
        return 0.5 * xp.einsum("ij,ij->i", x, g), g

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` exact draws, shape (n, dim)."""
        return rng.standard_normal((n, self.dim)) * np.sqrt(self.variances)

    @property
    def mean(self) -> np.ndarray:
        return np.zeros(self.dim)


@attrs.frozen
class RoughWell:
    """The paper's "rough well" (section 5): a wide quadratic bowl with sinusoidal ripples.

    ``E(x) = |x|² / (2 σ₁²) + Σ_i cos(π x_i / σ₂)``, with ``σ₁ = 100``, ``σ₂ = 2``
    and ``dim = 2`` in the paper.

    Parameters
    ----------
    sigma1 : float
        Width of the quadratic well.
    sigma2 : float
        Half-period of the ripples.
    dim : int
        Dimension (2 in the paper).
    """

    sigma1: float = attrs.field(default=100.0, validator=attrs_validator(positive_finite))
    sigma2: float = attrs.field(default=2.0, validator=attrs_validator(positive_finite))
    dim: int = attrs.field(default=2, validator=attrs_validator(positive_int))

    def energy(self, x: np.ndarray) -> np.ndarray:
        xp = namespace(x)
        k = np.pi / self.sigma2
        return (x * x).sum(axis=1) / (2 * self.sigma1**2) + xp.cos(k * x).sum(axis=1)

    def grad(self, x: np.ndarray) -> np.ndarray:
        xp = namespace(x)
        k = np.pi / self.sigma2
        return x / self.sigma1**2 - k * xp.sin(k * x)

    def energy_and_grad(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        xp = namespace(x)
        k = np.pi / self.sigma2
        kx = k * x
        e = (x * x).sum(axis=1) / (2 * self.sigma1**2) + xp.cos(kx).sum(axis=1)
        return e, x / self.sigma1**2 - k * xp.sin(kx)

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` exact draws by rejection, coordinate by coordinate, shape (n, dim).

        The density factorises; each coordinate is drawn from ``N(0, σ₁²)`` and
        accepted with probability ``exp(-cos(π x/σ₂) - 1) ≤ 1`` (about 47%).
        """
        out = np.empty(n * self.dim)
        filled = 0
        while filled < out.size:
            need = out.size - filled
            cand = rng.normal(0.0, self.sigma1, size=2 * need + 16)
            keep = cand[rng.random(cand.size) < np.exp(-np.cos(np.pi * cand / self.sigma2) - 1)]
            take = keep[:need]
            out[filled : filled + take.size] = take
            filled += take.size
        return out.reshape(n, self.dim)


@attrs.frozen
class GammaTarget:
    """Independent Gamma coordinates on ``x > 0``: shape ``k``, rate ``θ``.

    ``E(x) = Σ_i (θ x_i − (k − 1) log x_i)``, ``+inf`` where a coordinate is not
    positive (density zero). Mean ``k/θ``, variance ``k/θ²``. A target for maps on
    positive variables (:class:`~ladder_mcmc.ladder.log_scale.LogScaleWalk`).

    Parameters
    ----------
    shape : float
        ``k > 0``.
    rate : float
        ``θ > 0``.
    dim : int
        Number of independent coordinates.

    Examples
    --------
    >>> import numpy as np
    >>> t = GammaTarget(2.0, 0.5)
    >>> t.energy(np.array([[1.0], [-1.0]]))
    array([0.5, inf])
    >>> float(t.mean[0]), float(t.variance[0])
    (4.0, 8.0)
    """

    shape: float = attrs.field(validator=attrs_validator(positive_finite))
    rate: float = attrs.field(default=1.0, validator=attrs_validator(positive_finite))
    dim: int = attrs.field(default=1, validator=attrs_validator(positive_int))

    def energy(self, x: np.ndarray) -> np.ndarray:
        xp = namespace(x)
        x = xp.asarray(x, dtype=xp.float64)
        inside = (x > 0).all(axis=1)
        safe = xp.where(x > 0, x, 1.0)
        e = (self.rate * safe - (self.shape - 1.0) * xp.log(safe)).sum(axis=1)
        return xp.where(inside, e, xp.inf)

    def grad(self, x: np.ndarray) -> np.ndarray:
        xp = namespace(x)
        x = xp.asarray(x, dtype=xp.float64)
        with np.errstate(divide="ignore"):
            return self.rate - (self.shape - 1.0) / x

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` exact draws, shape (n, dim)."""
        return rng.gamma(self.shape, 1.0 / self.rate, size=(n, self.dim))

    @property
    def mean(self) -> np.ndarray:
        return np.full(self.dim, self.shape / self.rate)

    @property
    def variance(self) -> np.ndarray:
        return np.full(self.dim, self.shape / self.rate**2)


@attrs.frozen
class NealsFunnel:
    """Neal's funnel: ``v ~ N(0, s²)``, ``x_i | v ~ N(0, e^v)`` for ``i = 1 … dim − 1``.

    A multiscale target (Neal 2003, "Slice sampling", section 8): the scale of ``x``
    ranges over ``e^{±s}`` with ``v``, so no single step size fits the neck and the
    mouth. Coordinates ``(v, x_1, …, x_{dim−1})``; ``s = 3`` and ``dim = 10`` are
    Neal's. Energy, constants dropped, with ``n = dim − 1``::

        E = v² / (2 s²) + n v / 2 + ½ e^{−v} Σ x_i²

    Exact moments: ``E v = 0``, ``Var v = s²``, ``E x_i = 0``,
    ``Var x_i = E e^v = e^{s²/2}`` (``e^{4.5} ≈ 90`` for ``s = 3``); exact draws by
    :meth:`sample`. Far down the neck ``e^{−v}`` overflows and the energy is ``inf``
    (density zero, as the ladder treats it).

    Parameters
    ----------
    dim : int
        Dimension, at least 2 (``v`` and one ``x``).
    scale : float
        ``s``, the standard deviation of ``v``.

    Examples
    --------
    >>> import numpy as np
    >>> t = NealsFunnel(3)
    >>> t.energy(np.array([[0.0, 1.0, 1.0]]))
    array([1.])
    >>> t.variance.round(3)
    array([ 9.   , 90.017, 90.017])
    >>> t.parameters.labels
    ('v', 'x[0]', 'x[1]')
    """

    dim: int = attrs.field(default=10, validator=attrs_validator(positive_int))
    scale: float = attrs.field(default=3.0, validator=attrs_validator(positive_finite))

    @dim.validator
    def _check_dim(self, _attr, value):
        if value < 2:
            raise ValueError(f"dim must be at least 2 (v and one x), got {value!r}")

    def energy_and_grad(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        xp = namespace(x)
        x = xp.asarray(x, dtype=xp.float64)
        v, rest = x[:, 0], x[:, 1:]
        n = self.dim - 1
        with np.errstate(over="ignore", invalid="ignore"):
            w = xp.exp(-v)  # the precision of every x_i
            half_ss = 0.5 * xp.einsum("ij,ij->i", rest, rest)
            e = v * v / (2 * self.scale**2) + 0.5 * n * v + w * half_ss
            g_v = v / self.scale**2 + 0.5 * n - w * half_ss
            g = xp.concatenate([g_v[:, None], rest * w[:, None]], axis=1)
        return e, g

    def energy(self, x: np.ndarray) -> np.ndarray:
        return self.energy_and_grad(x)[0]

    def grad(self, x: np.ndarray) -> np.ndarray:
        return self.energy_and_grad(x)[1]

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` exact draws, shape (n, dim): ``v = s z₀``, ``x_i = e^{v/2} z_i``."""
        z = rng.standard_normal((n, self.dim))
        v = self.scale * z[:, 0]
        return np.column_stack([v, z[:, 1:] * np.exp(0.5 * v)[:, None]])

    def local_scale(self, x: np.ndarray) -> np.ndarray:
        """The scale of the ``x_i`` at positions ``x`` (chains, dim): ``e^{v/2}``, shape
        (chains,) (a scale hint for
        :func:`~ladder_mcmc.hamiltonian.state_length.state_length_lahmc`)."""
        xp = namespace(x)
        return xp.exp(0.5 * xp.asarray(x, dtype=xp.float64)[:, 0])

    @property
    def mean(self) -> np.ndarray:
        return np.zeros(self.dim)

    @property
    def variance(self) -> np.ndarray:
        """``(s², e^{s²/2}, …, e^{s²/2})``."""
        return np.r_[self.scale**2, np.full(self.dim - 1, np.exp(0.5 * self.scale**2))]

    @property
    def parameters(self) -> ParameterSpace:
        """``v`` (a scalar) and ``x`` (a vector of ``dim − 1``), no transform."""
        return ParameterSpace(self.dim, [("v", ()), ("x", (self.dim - 1,))])
