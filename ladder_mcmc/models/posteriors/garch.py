"""``garch-garch11``: GARCH(1, 1) volatility model, flat priors.

Stan model (posteriordb ``garch11``)::

    parameters { real mu; real<lower=0> alpha0; real<lower=0, upper=1> alpha1;
                 real<lower=0, upper=(1 - alpha1)> beta1; }
    model { sigma[1] = sigma1;
            sigma[t] = sqrt(alpha0 + alpha1 (y[t-1] - mu)² + beta1 sigma[t-1]²), t ≥ 2;
            y ~ normal(mu, sigma); }

Unconstrained ``x = (mu, u0, u1, u2)``: ``alpha0 = exp(u0)``, ``alpha1 = logit⁻¹(u1)``,
``beta1 = (1 - alpha1) logit⁻¹(u2)``. Stan's log-Jacobian::

    u0 + log a1 + log(1 - a1) + log(1 - a1) + log s2 + log(1 - s2),   s2 = logit⁻¹(u2)

(the second ``log(1 - a1)`` is the width of beta1's interval, which depends on alpha1).
With ``h_t = sigma[t]²`` and ``e_t = y_t - mu``::

    E = Σ_t (½ log h_t + ½ e_t²/h_t) - log J

The gradient propagates ``∂h_t/∂(mu, alpha0, alpha1, beta1)`` forward through the
recursion ``h_t = alpha0 + alpha1 e_{t-1}² + beta1 h_{t-1}`` (forward mode by hand,
all chains at once), then applies the chain rule to the unconstrained scale.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
import numpy as np

from ladder_mcmc.arrays import namespace
from ladder_mcmc.models.posteriors.posterior import Posterior, count, recurrence, vector
from ladder_mcmc.models.posteriors.transforms import inv_logit, log1m_inv_logit, log_inv_logit


@attrs.frozen(eq=False, repr=False)
class Garch11(Posterior):
    """GARCH(1, 1); ``dim = 4``.

    Parameters
    ----------
    y : array (T,)
        The series.
    sigma1 : float
        Initial volatility ``sigma[1] > 0`` (data).
    reference : Reference, optional
        Reference summaries of ``mu, alpha0, alpha1, beta1``.

    Examples
    --------
    >>> t = Garch11.from_data({"T": 3, "y": [0.0, 1.0, -1.0], "sigma1": 0.5})
    >>> t.constrain(np.array([[0.0, 0.0, 0.0, 0.0]]))
    array([[0.  , 1.  , 0.5 , 0.25]])
    """

    name = "garch-garch11"
    y: np.ndarray
    sigma1: float
    reference: Any = None
    param_names = ("mu", "alpha0", "alpha1", "beta1")
    dim = 4

    @classmethod
    def from_data(cls, data: Mapping[str, Any], reference: Any = None) -> Garch11:
        """Build from a posteriordb data dict ``{"T", "y", "sigma1"}``."""
        t = count(data, "T", 1)
        if "sigma1" not in data:
            raise ValueError(f"data is missing 'sigma1' (has {sorted(data)})")
        sigma1 = np.ravel(np.asarray(data["sigma1"], dtype=float))
        if sigma1.shape != (1,) or not (np.isfinite(sigma1[0]) and sigma1[0] > 0):
            raise ValueError(f"data['sigma1'] must be a number > 0, got {data['sigma1']!r}")
        return cls(vector(data, "y", t), float(sigma1[0]), reference)

    def _energy_and_grad(self, x):
        xp = namespace(x, self.y)
        mu, u0, u1, u2 = x.T
        a0, a1, s2 = xp.exp(u0), inv_logit(u1), inv_logit(u2)
        b1 = (1.0 - a1) * s2
        y = self.y
        e = y[:, None] - mu  # (T, chains)
        # Forward mode: s_t = (h_t, ∂h_t/∂mu, ∂h_t/∂alpha0, ∂h_t/∂alpha1, ∂h_t/∂beta1) obeys
        # s_t = beta1 s_{t-1} + c_t with c_t = (alpha0 + alpha1 e², -2 alpha1 e, 1, e², h_{t-1}),
        # e = e_{t-1}; the inputs that do not depend on h are computed for all t at once.
        e_prev = e[:-1]
        c = xp.stack(
            [a0 + a1 * e_prev**2, -2.0 * a1 * e_prev, xp.ones_like(e_prev), e_prev**2], axis=1
        )
        zeros = xp.zeros_like(mu)
        s0 = xp.stack([zeros + self.sigma1**2, zeros, zeros, zeros, zeros])

        def step(prev, c_t):
            m = b1 * prev
            return xp.concatenate([m[:4] + c_t, (m[4] + prev[0])[None]])

        s = recurrence(step, s0, c)  # (T, 5, chains)
        h, dh = s[:, 0], s[:, 1:]
        inv_h = 1.0 / h
        z2 = e * e * inv_h
        log_jac = u0 + log_inv_logit(u1) + 2.0 * log1m_inv_logit(u1)
        log_jac = log_jac + log_inv_logit(u2) + log1m_inv_logit(u2)
        energy = 0.5 * (xp.log(h) + z2).sum(axis=0) - log_jac
        # ∂E/∂θ for θ = (mu, alpha0, alpha1, beta1): through h, plus mu's direct term
        w = 0.5 * inv_h * (1.0 - z2)  # ∂E/∂h_t
        d_theta = xp.einsum("tc,tpc->cp", w, dh)
        d_mu = d_theta[:, 0] - (e * inv_h).sum(axis=0)
        g = xp.stack(
            [
                d_mu,
                d_theta[:, 1] * a0 - 1.0,
                # alpha1 = σ(u1) moves beta1 too: ∂b1/∂u1 = -s2 a1 (1 - a1) = -a1 b1
                d_theta[:, 2] * a1 * (1.0 - a1) - d_theta[:, 3] * a1 * b1 - (1.0 - 3.0 * a1),
                d_theta[:, 3] * b1 * (1.0 - s2) - (1.0 - 2.0 * s2),
            ],
            axis=1,
        )
        return energy, g

    def _constrain(self, x):
        a1 = inv_logit(x[:, 2])
        return np.column_stack([x[:, 0], np.exp(x[:, 1]), a1, (1.0 - a1) * inv_logit(x[:, 3])])
