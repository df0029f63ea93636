"""Hierarchical eight schools, non-centred (posteriordb) and centred (the same posterior).

``eight_schools-eight_schools_noncentered``, :class:`EightSchoolsNoncentered`:

Stan model (posteriordb ``eight_schools_noncentered``)::

    parameters { vector[J] theta_trans; real mu; real<lower=0> tau; }
    transformed parameters { vector[J] theta = theta_trans * tau + mu; }
    model { theta_trans ~ normal(0, 1); y ~ normal(theta, sigma);
            mu ~ normal(0, 5); tau ~ cauchy(0, 5); }

Unconstrained ``x = (theta_trans[1..J], mu, log tau)``; ``tau = exp(x_J+1)``, log-Jacobian
``log tau``. Energy, constants dropped::

    E = ½ Σ tt² + ½ Σ ((y - θ)/σ)² + mu²/50 + log(1 + (tau/5)²) - log tau

``eight_schools-eight_schools_centered``, :class:`EightSchoolsCentered`: the same model
with ``theta ~ normal(mu, tau)`` sampled directly, a funnel in ``(theta, log tau)``.
Unconstrained ``x = (theta[1..J], mu, log tau)``; energy, constants dropped::

    E = ½ Σ ((y - θ)/σ)² + ½ Σ (θ - mu)² / tau² + J log tau + mu²/50
        + log(1 + (tau/5)²) - log tau

Both are the same posterior over ``(theta, mu, tau)``; posteriordb has reference draws
for the non-centred one only, and :meth:`EightSchoolsCentered.load` takes them as the
centred model's reference.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
import numpy as np

from ladder_mcmc.arrays import namespace
from ladder_mcmc.models.posteriors.posterior import Posterior, count, indexed, vector
from ladder_mcmc.models.posteriors.references import Reference, find_database, read_database


@attrs.frozen(eq=False, repr=False)
class EightSchoolsNoncentered(Posterior):
    """Non-centred eight schools; ``dim = J + 2`` (10 for the posteriordb data).

    Parameters
    ----------
    y : array (J,)
        Estimated treatment effects.
    sigma : array (J,)
        Their standard errors (> 0).
    reference : Reference, optional
        Reference summaries of ``theta[1..J], mu, tau``.

    Examples
    --------
    >>> t = EightSchoolsNoncentered.from_data({"J": 2, "y": [1.0, 2.0], "sigma": [1.0, 2.0]})
    >>> t.dim, t.param_names
    (4, ('theta[1]', 'theta[2]', 'mu', 'tau'))
    >>> t.constrain(np.array([[1.0, -1.0, 3.0, 0.0]]))
    array([[4., 2., 3., 1.]])
    """

    name = "eight_schools-eight_schools_noncentered"
    y: np.ndarray
    sigma: np.ndarray
    reference: Any = None

    @classmethod
    def from_data(cls, data: Mapping[str, Any], reference: Any = None) -> EightSchoolsNoncentered:
        """Build from a posteriordb data dict ``{"J", "y", "sigma"}``."""
        j = count(data, "J", 1)
        sigma = vector(data, "sigma", j)
        if np.any(sigma <= 0):
            raise ValueError("data['sigma'] must be > 0")
        return cls(vector(data, "y", j), sigma, reference)

    @property
    def dim(self) -> int:  # type: ignore[override]
        return self.y.shape[0] + 2

    @property
    def param_names(self) -> tuple[str, ...]:
        return indexed("theta", self.y.shape[0]) + ("mu", "tau")

    def _energy_and_grad(self, x):
        xp = namespace(x, self.y, self.sigma)
        j = self.y.shape[0]
        tt, mu, log_tau = x[:, :j], x[:, j], x[:, j + 1]
        tau = xp.exp(log_tau)
        theta = tt * tau[:, None] + mu[:, None]
        r = (theta - self.y) / self.sigma**2  # ∂/∂θ of ½((y-θ)/σ)²
        q = (tau / 5.0) ** 2
        e = (
            0.5 * xp.einsum("ij,ij->i", tt, tt)
            + 0.5 * xp.einsum("ij,ij->i", r, theta - self.y)
            + mu**2 / 50.0
            + xp.log1p(q)
            - log_tau
        )
        g_mu = r.sum(axis=1) + mu / 25.0
        g_log_tau = tau * xp.einsum("ij,ij->i", r, tt) + 2.0 * q / (1.0 + q) - 1.0
        g = xp.concatenate([tt + r * tau[:, None], g_mu[:, None], g_log_tau[:, None]], axis=1)
        return e, g

    def _constrain(self, x):
        j = self.y.shape[0]
        tau = np.exp(x[:, j + 1])
        theta = x[:, :j] * tau[:, None] + x[:, j, None]
        return np.column_stack([theta, x[:, j], tau])


@attrs.frozen(eq=False, repr=False)
class EightSchoolsCentered(Posterior):
    """Centred eight schools; ``dim = J + 2`` (10 for the posteriordb data).

    ``theta ~ normal(mu, tau)`` sampled as it is (posteriordb's
    ``eight_schools_centered``), with the priors and data of
    :class:`EightSchoolsNoncentered`: the same posterior over ``(theta, mu, tau)``,
    parametrised as a funnel (small ``tau`` squeezes every ``theta`` onto ``mu``), the
    classic hard case for HMC. Not in :data:`~ladder_mcmc.models.posteriors.MODELS`:
    the reference file has no record of its own; :meth:`load` builds it from the
    non-centred record.

    Parameters
    ----------
    y : array (J,)
        Estimated treatment effects.
    sigma : array (J,)
        Their standard errors (> 0).
    reference : Reference, optional
        Reference summaries of ``theta[1..J], mu, tau``.

    Examples
    --------
    >>> t = EightSchoolsCentered.from_data({"J": 2, "y": [1.0, 2.0], "sigma": [1.0, 2.0]})
    >>> t.dim, t.param_names
    (4, ('theta[1]', 'theta[2]', 'mu', 'tau'))
    >>> t.constrain(np.array([[4.0, 2.0, 3.0, 0.0]]))
    array([[4., 2., 3., 1.]])
    """

    name = "eight_schools-eight_schools_centered"
    #: the posteriordb record whose data and reference draws it takes
    source = EightSchoolsNoncentered.name
    y: np.ndarray
    sigma: np.ndarray
    reference: Any = None

    @classmethod
    def from_data(cls, data: Mapping[str, Any], reference: Any = None) -> EightSchoolsCentered:
        """Build from a posteriordb data dict ``{"J", "y", "sigma"}``."""
        j = count(data, "J", 1)
        sigma = vector(data, "sigma", j)
        if np.any(sigma <= 0):
            raise ValueError("data['sigma'] must be > 0")
        return cls(vector(data, "y", j), sigma, reference)

    @classmethod
    def load(cls, path: Any = None) -> EightSchoolsCentered:
        """The centred model with the data and reference of the non-centred record.

        The reference summaries of ``theta, mu, tau`` are the non-centred model's (the
        same posterior; checked by name, as :func:`~ladder_mcmc.models.posteriors.load`
        checks); the unconstrained ones are ``theta``'s constrained summaries, and
        ``mu`` and ``log_tau`` as recorded.

        Parameters
        ----------
        path : path-like, optional
            The reference file, as for :func:`~ladder_mcmc.models.posteriors.load`.
        """
        table = read_database(path)
        if cls.source not in table:
            raise ValueError(
                f"posterior {cls.source!r} is not in the reference file {find_database(path)}"
            )
        record = table[cls.source]
        ref = Reference.from_record(record)
        j = count(record["data"], "J", 1)
        names = indexed("theta", j) + ("mu", "tau")
        if ref.names != names:
            raise ValueError(
                f"{cls.name}: reference parameters {ref.names} do not match the model's {names}"
            )
        unconstrained = {
            n: {"mean": float(ref.mean[i]), "sd": float(ref.sd[i])} for i, n in enumerate(names[:j])
        }
        for key in ("mu", "log_tau"):
            unconstrained[key] = dict(ref.unconstrained[key])
        reference = attrs.evolve(ref, unconstrained=unconstrained)
        return cls.from_data(record["data"], reference)

    @property
    def dim(self) -> int:  # type: ignore[override]
        return self.y.shape[0] + 2

    @property
    def param_names(self) -> tuple[str, ...]:
        return indexed("theta", self.y.shape[0]) + ("mu", "tau")

    def _energy_and_grad(self, x):
        xp = namespace(x, self.y, self.sigma)
        j = self.y.shape[0]
        theta, mu, log_tau = x[:, :j], x[:, j], x[:, j + 1]
        prec = xp.exp(-2.0 * log_tau)  # 1 / tau²
        d = theta - mu[:, None]
        r = (theta - self.y) / self.sigma**2  # ∂/∂θ of ½((y-θ)/σ)²
        ss = xp.einsum("ij,ij->i", d, d)
        q = xp.exp(2.0 * log_tau) / 25.0  # (tau/5)²
        e = (
            0.5 * xp.einsum("ij,ij->i", r, theta - self.y)
            + 0.5 * ss * prec
            + (j - 1) * log_tau  # J log tau (theta's prior) - log tau (Jacobian)
            + mu**2 / 50.0
            + xp.log1p(q)
        )
        g_mu = -d.sum(axis=1) * prec + mu / 25.0
        g_log_tau = -ss * prec + (j - 1) + 2.0 * q / (1.0 + q)
        g = xp.concatenate([r + d * prec[:, None], g_mu[:, None], g_log_tau[:, None]], axis=1)
        return e, g

    def _constrain(self, x):
        j = self.y.shape[0]
        return np.column_stack([x[:, : j + 1], np.exp(x[:, j + 1])])


def exact_moments(
    y: np.ndarray, sigma: np.ndarray, n_grid: int = 20_001
) -> tuple[np.ndarray, np.ndarray]:
    """Exact posterior means and variances of ``(theta[1..J], mu, tau)``, by quadrature.

    For eight schools (either parametrisation; priors ``mu ~ N(0, 5²)``,
    ``tau ~ half-Cauchy(0, 5)``) ``theta`` and ``mu`` integrate out in closed form
    given ``tau`` (Gelman et al., *Bayesian Data Analysis*, section 5.4, with the
    normal prior on ``mu`` added): ``y_j | mu, tau ~ N(mu, V_j)``, ``V_j = σ_j² + τ²``;
    ``mu | tau, y ~ N(m, s²)`` with ``1/s² = Σ 1/V_j + 1/25``, ``m = s² Σ y_j / V_j``;
    ``p(tau | y) ∝ p(tau) s Π V_j^{-1/2} exp(-½ Σ y_j²/V_j + ½ m²/s²)``; and
    ``theta_j | mu, tau, y`` is normal with mean ``(1 − B_j) y_j + B_j mu``,
    ``B_j = σ_j² / V_j``. What is left is one integral over ``log tau``, taken on an
    even grid of ``n_grid`` points over ``(−25, 12)``.

    Returns
    -------
    mean, var : arrays (J + 2,)
        In the order ``theta[1..J], mu, tau``.

    Examples
    --------
    >>> mean, var = exact_moments(np.array([28.0, 8, -3, 7, -1, 1, 18, 12]),
    ...                           np.array([15.0, 10, 16, 11, 9, 11, 10, 18]))
    >>> mean[-2:].round(2), np.sqrt(var[-2:]).round(2)  # mu, tau
    (array([4.4, 3.6]), array([3.32, 3.22]))
    """
    w, cond_mean, cond_var = conditional_moments(y, sigma, n_grid)
    mean = w @ cond_mean
    var = w @ cond_var + w @ (cond_mean - mean) ** 2
    return mean, var


def conditional_moments(
    y: np.ndarray, sigma: np.ndarray, n_grid: int = 20_001
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(w, mean, var)``: the quadrature weights over ``log tau`` and, at each grid point,
    the conditional means and variances of ``(theta[1..J], mu, tau)`` given ``tau``
    (arrays (n_grid, J + 2); :func:`exact_moments`)."""
    y, sigma = np.asarray(y, dtype=float), np.asarray(sigma, dtype=float)
    u, w = log_tau_posterior(y, sigma, n_grid)
    tau2 = np.exp(2.0 * u)[:, None]
    v = sigma**2 + tau2  # (grid, J)
    s2 = 1.0 / ((1.0 / v).sum(axis=1, keepdims=True) + 1.0 / 25.0)
    m = s2 * (y / v).sum(axis=1, keepdims=True)
    b = sigma**2 / v
    theta_mean = (1.0 - b) * y + b * m  # given tau
    theta_var = 1.0 / (1.0 / sigma**2 + 1.0 / tau2) + b * b * s2
    cond_mean = np.column_stack([theta_mean, m, np.sqrt(tau2)])
    cond_var = np.column_stack([theta_var, s2, np.zeros_like(m)])
    return w, cond_mean, cond_var


def log_tau_posterior(
    y: np.ndarray, sigma: np.ndarray, n_grid: int = 20_001
) -> tuple[np.ndarray, np.ndarray]:
    """The exact marginal posterior of ``log tau`` on a grid (see :func:`exact_moments`).

    Returns
    -------
    u, w : arrays (n_grid,)
        An even grid of ``log tau`` over ``(−25, 12)`` and the posterior's quadrature
        weights there (summing to 1): ``P(log tau < c) ≈ w[u < c].sum()``.

    Examples
    --------
    >>> u, w = log_tau_posterior(np.array([28.0, 8, -3, 7, -1, 1, 18, 12]),
    ...                          np.array([15.0, 10, 16, 11, 9, 11, 10, 18]))
    >>> round(float(w[u < -2].sum()), 4)  # the neck of the centred model's funnel
    0.0275
    """
    y, sigma = np.asarray(y, dtype=float), np.asarray(sigma, dtype=float)
    u = np.linspace(-25.0, 12.0, n_grid)
    tau2 = np.exp(2.0 * u)[:, None]
    v = sigma**2 + tau2  # (grid, J): y_j | mu, tau ~ N(mu, V_j)
    s2 = 1.0 / ((1.0 / v).sum(axis=1) + 1.0 / 25.0)  # mu | tau, y ~ N(m, s2)
    m = s2 * (y / v).sum(axis=1)
    log_w = (
        u  # d tau = tau d log tau
        - np.log1p(tau2[:, 0] / 25.0)
        + 0.5 * np.log(s2)
        - 0.5 * np.log(v).sum(axis=1)
        - 0.5 * (y * y / v).sum(axis=1)
        + 0.5 * m * m / s2
    )
    w = np.exp(log_w - log_w.max())
    return u, w / w.sum()
