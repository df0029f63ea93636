"""``arma-arma11``: ARMA(1, 1) with weakly informative priors.

Stan model (posteriordb ``arma11``)::

    parameters { real mu; real phi; real theta; real<lower=0> sigma; }
    model { mu ~ normal(0, 10); phi ~ normal(0, 2); theta ~ normal(0, 2);
            sigma ~ cauchy(0, 2.5);
            err[1] = y[1] - (mu + phi mu);
            err[t] = y[t] - (mu + phi y[t-1] + theta err[t-1]), t ≥ 2;
            err ~ normal(0, sigma); }

Unconstrained ``x = (mu, phi, theta, log sigma)`` (phi and theta are not restricted to
the stationary region), log-Jacobian ``log sigma``::

    E = mu²/200 + phi²/8 + theta²/8 + log(1 + (sigma/2.5)²) + T log sigma
        + ½ Σ err_t²/sigma² - log sigma

The gradient propagates ``∂err_t/∂(mu, phi, theta)`` forward through the recursion
(forward mode by hand, all chains at once).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
import numpy as np

from ladder_mcmc.models.posteriors.posterior import Posterior, count, vector


@attrs.frozen(eq=False, repr=False)
class Arma11(Posterior):
    """ARMA(1, 1); ``dim = 4``.

    Parameters
    ----------
    y : array (T,)
        The series.
    reference : Reference, optional
        Reference summaries of ``mu, phi, theta, sigma``.

    Examples
    --------
    >>> t = Arma11.from_data({"T": 2, "y": [1.0, 2.0]})
    >>> t.param_names
    ('mu', 'phi', 'theta', 'sigma')
    """

    name = "arma-arma11"
    y: np.ndarray
    reference: Any = None
    param_names = ("mu", "phi", "theta", "sigma")
    dim = 4

    @classmethod
    def from_data(cls, data: Mapping[str, Any], reference: Any = None) -> Arma11:
        """Build from a posteriordb data dict ``{"T", "y"}``."""
        return cls(vector(data, "y", count(data, "T", 1)), reference)

    def _energy_and_grad(self, x):
        mu, phi, theta, log_sigma = x.T
        y = self.y
        n_t, chains = y.shape[0], x.shape[0]
        # Forward mode: s_t = (err_t, ∂err_t/∂mu, ∂err_t/∂phi, ∂err_t/∂theta) obeys
        # s_t = -theta s_{t-1} + (y_t - mu - phi y_{t-1}, -1, -y_{t-1}, -err_{t-1}) for t ≥ 2
        # and s_1 = (y_1 - mu - phi mu, -(1 + phi), -mu, 0).
        c = np.empty((n_t, 3, chains))
        c[1:, 0] = y[1:, None] - mu - phi * y[:-1, None]
        c[1:, 1] = -1.0
        c[1:, 2] = -y[:-1, None]
        s = np.empty((n_t, 4, chains))
        s[0, 0] = y[0] - (mu + phi * mu)
        s[0, 1] = -(1.0 + phi)
        s[0, 2] = -mu
        s[0, 3] = 0.0
        minus_theta = -theta
        for t in range(1, n_t):
            np.multiply(minus_theta, s[t - 1], out=s[t])
            s[t, :3] += c[t]
            s[t, 3] -= s[t - 1, 0]
        err = s[:, 0]
        ss = np.einsum("tc,tc->c", err, err)
        d_ss = 2.0 * np.einsum("tc,tpc->cp", err, s[:, 1:])
        prec = np.exp(-2.0 * log_sigma)
        q = np.exp(2.0 * log_sigma) / 2.5**2
        e = (
            mu**2 / 200.0
            + (phi**2 + theta**2) / 8.0
            + np.log1p(q)
            + (n_t - 1) * log_sigma
            + 0.5 * ss * prec
        )
        g = np.empty_like(x)
        g[:, 0] = mu / 100.0 + 0.5 * prec * d_ss[:, 0]
        g[:, 1] = phi / 4.0 + 0.5 * prec * d_ss[:, 1]
        g[:, 2] = theta / 4.0 + 0.5 * prec * d_ss[:, 2]
        g[:, 3] = 2.0 * q / (1.0 + q) + (n_t - 1) - ss * prec
        return e, g

    def _constrain(self, x):
        return np.column_stack([x[:, :3], np.exp(x[:, 3])])
