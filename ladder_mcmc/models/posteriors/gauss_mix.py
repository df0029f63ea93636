"""``low_dim_gauss_mix-low_dim_gauss_mix``: two-component normal mixture, ordered means.

Stan model (posteriordb ``low_dim_gauss_mix``)::

    parameters { ordered[2] mu; array[2] real<lower=0> sigma; real<lower=0, upper=1> theta; }
    model { sigma ~ normal(0, 2); mu ~ normal(0, 2); theta ~ beta(5, 5);
            target += log_mix(theta, normal_lpdf(y[n] | mu[1], sigma[1]),
                                     normal_lpdf(y[n] | mu[2], sigma[2])); }

Unconstrained ``x = (mu[1], log(mu[2] - mu[1]), log sigma[1], log sigma[2], logit theta)``;
log-Jacobian ``x₂ + x₃ + x₄ + log theta + log(1 - theta)``. With
``ℓ_kn = log w_k - log sigma_k - ½ ((y_n - mu_k)/sigma_k)²`` (``w = (theta, 1 - theta)``)::

    E = -Σ_n logsumexp_k ℓ_kn + |mu|²/8 + |sigma|²/8 - 4 log theta - 4 log(1 - theta) - log J
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
import numpy as np

from ladder_mcmc.arrays import namespace
from ladder_mcmc.models.posteriors.posterior import Posterior, count, vector
from ladder_mcmc.models.posteriors.transforms import inv_logit, log1m_inv_logit, log_inv_logit


@attrs.frozen(eq=False, repr=False)
class LowDimGaussMix(Posterior):
    """Two-component 1-d normal mixture with ordered means; ``dim = 5``.

    Parameters
    ----------
    y : array (N,)
        Observations.
    reference : Reference, optional
        Reference summaries of ``mu[1], mu[2], sigma[1], sigma[2], theta``.

    Examples
    --------
    >>> t = LowDimGaussMix.from_data({"N": 2, "y": [-1.0, 1.0]})
    >>> t.constrain(np.array([[-1.0, np.log(2.0), 0.0, 0.0, 0.0]]))
    array([[-1. ,  1. ,  1. ,  1. ,  0.5]])
    """

    name = "low_dim_gauss_mix-low_dim_gauss_mix"
    y: np.ndarray
    reference: Any = None
    param_names = ("mu[1]", "mu[2]", "sigma[1]", "sigma[2]", "theta")
    dim = 5

    @classmethod
    def from_data(cls, data: Mapping[str, Any], reference: Any = None) -> LowDimGaussMix:
        """Build from a posteriordb data dict ``{"N", "y"}``."""
        return cls(vector(data, "y", count(data, "N", 1)), reference)

    def _energy_and_grad(self, x):
        xp = namespace(x, self.y)
        mu1, gap_log, ls1, ls2, lt = x.T
        gap = xp.exp(gap_log)
        mu2 = mu1 + gap
        s1, s2 = xp.exp(ls1), xp.exp(ls2)
        theta = inv_logit(lt)
        y = self.y
        z1 = (y - mu1[:, None]) / s1[:, None]  # (chains, N)
        z2 = (y - mu2[:, None]) / s2[:, None]
        q1, q2 = z1 * z1, z2 * z2
        l1 = (log_inv_logit(lt) - ls1)[:, None] - 0.5 * q1  # ℓ_1n
        l2 = (log1m_inv_logit(lt) - ls2)[:, None] - 0.5 * q2  # ℓ_2n
        # logsumexp = max(ℓ_1, ℓ_2) + log1p(exp(-|ℓ_1 - ℓ_2|)), exact in the far tails
        diff = l1 - l2
        tail = xp.exp(-xp.abs(diff))
        log_lik = (xp.maximum(l1, l2) + xp.log1p(tail)).sum(axis=1)
        r1 = xp.where(diff >= 0, 1.0, tail) / (1.0 + tail)  # responsibilities
        r2 = xp.where(diff >= 0, tail, 1.0) / (1.0 + tail)
        log_prior = -(mu1**2 + mu2**2 + s1**2 + s2**2) / 8.0
        log_prior = log_prior + 4.0 * (log_inv_logit(lt) + log1m_inv_logit(lt))
        log_jac = gap_log + ls1 + ls2 + log_inv_logit(lt) + log1m_inv_logit(lt)
        e = -(log_lik + log_prior + log_jac)
        # d log_lik / d(mu_k): Σ r_k z_k / s_k; d/d(log s_k): Σ r_k (z_k² - 1)
        d_mu1 = (r1 * z1).sum(axis=1) / s1 - mu1 / 4.0
        d_mu2 = (r2 * z2).sum(axis=1) / s2 - mu2 / 4.0
        r1_sum = r1.sum(axis=1)
        g = xp.stack(
            [
                -(d_mu1 + d_mu2),
                -(d_mu2 * gap + 1.0),
                -((r1 * (z1 * z1 - 1.0)).sum(axis=1) - s1**2 / 4.0 + 1.0),
                -((r2 * (z2 * z2 - 1.0)).sum(axis=1) - s2**2 / 4.0 + 1.0),
                # d/d(logit theta): Σ (r1 (1 - θ) - r2 θ) = Σ r1 - N θ; prior+Jacobian:
                # 5 (1 - 2θ)
                -(r1_sum - y.shape[0] * theta + 5.0 * (1.0 - 2.0 * theta)),
            ],
            axis=1,
        )
        return e, g

    def _constrain(self, x):
        mu1, gap = x[:, 0], np.exp(x[:, 1])
        return np.column_stack([mu1, mu1 + gap, np.exp(x[:, 2:4]), inv_logit(x[:, 4])])
