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

from ladder_mcmc.arrays import namespace
from ladder_mcmc.models.posteriors.posterior import Posterior, count, recurrence, vector


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
        xp = namespace(x, self.y)
        mu, phi, theta, log_sigma = x.T
        y = self.y
        n_t = y.shape[0]
        # Forward mode: s_t = (err_t, ∂err_t/∂mu, ∂err_t/∂phi, ∂err_t/∂theta) obeys
        # s_t = -theta s_{t-1} + (y_t - mu - phi y_{t-1}, -1, -y_{t-1}, -err_{t-1}) for t ≥ 2
        # and s_1 = (y_1 - mu - phi mu, -(1 + phi), -mu, 0).
        shift = y[1:, None] - mu - phi * y[:-1, None]  # (T-1, chains)
        lagged = xp.broadcast_to(-y[:-1, None], shift.shape)
        c = xp.stack([shift, xp.full_like(shift, -1.0), lagged], axis=1)
        s0 = xp.stack([y[0] - (mu + phi * mu), -(1.0 + phi), -mu, xp.zeros_like(mu)])
        minus_theta = -theta

        def step(prev, c_t):
            m = minus_theta * prev
            return xp.concatenate([m[:3] + c_t, (m[3] - prev[0])[None]])

        s = recurrence(step, s0, c)  # (T, 4, chains)
        err = s[:, 0]
        ss = xp.einsum("tc,tc->c", err, err)
        d_ss = 2.0 * xp.einsum("tc,tpc->cp", err, s[:, 1:])
        prec = xp.exp(-2.0 * log_sigma)
        q = xp.exp(2.0 * log_sigma) / 2.5**2
        e = (
            mu**2 / 200.0
            + (phi**2 + theta**2) / 8.0
            + xp.log1p(q)
            + (n_t - 1) * log_sigma
            + 0.5 * ss * prec
        )
        g = xp.stack(
            [
                mu / 100.0 + 0.5 * prec * d_ss[:, 0],
                phi / 4.0 + 0.5 * prec * d_ss[:, 1],
                theta / 4.0 + 0.5 * prec * d_ss[:, 2],
                2.0 * q / (1.0 + q) + (n_t - 1) - ss * prec,
            ],
            axis=1,
        )
        return e, g

    def _constrain(self, x):
        return np.column_stack([x[:, :3], np.exp(x[:, 3])])
