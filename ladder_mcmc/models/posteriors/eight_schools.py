"""``eight_schools-eight_schools_noncentered``: the non-centred hierarchical eight schools.

Stan model (posteriordb ``eight_schools_noncentered``)::

    parameters { vector[J] theta_trans; real mu; real<lower=0> tau; }
    transformed parameters { vector[J] theta = theta_trans * tau + mu; }
    model { theta_trans ~ normal(0, 1); y ~ normal(theta, sigma);
            mu ~ normal(0, 5); tau ~ cauchy(0, 5); }

Unconstrained ``x = (theta_trans[1..J], mu, log tau)``; ``tau = exp(x_J+1)``, log-Jacobian
``log tau``. Energy, constants dropped::

    E = ½ Σ tt² + ½ Σ ((y - θ)/σ)² + mu²/50 + log(1 + (tau/5)²) - log tau
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
import numpy as np

from ladder_mcmc.models.posteriors.posterior import Posterior, count, indexed, vector


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
        j = self.y.shape[0]
        tt, mu, log_tau = x[:, :j], x[:, j], x[:, j + 1]
        tau = np.exp(log_tau)
        theta = tt * tau[:, None] + mu[:, None]
        r = (theta - self.y) / self.sigma**2  # ∂/∂θ of ½((y-θ)/σ)²
        q = (tau / 5.0) ** 2
        e = (
            0.5 * np.einsum("ij,ij->i", tt, tt)
            + 0.5 * np.einsum("ij,ij->i", r, theta - self.y)
            + mu**2 / 50.0
            + np.log1p(q)
            - log_tau
        )
        g = np.empty_like(x)
        g[:, :j] = tt + r * tau[:, None]
        g[:, j] = r.sum(axis=1) + mu / 25.0
        g[:, j + 1] = tau * np.einsum("ij,ij->i", r, tt) + 2.0 * q / (1.0 + q) - 1.0
        return e, g

    def _constrain(self, x):
        j = self.y.shape[0]
        tau = np.exp(x[:, j + 1])
        theta = x[:, :j] * tau[:, None] + x[:, j, None]
        return np.column_stack([theta, x[:, j], tau])
