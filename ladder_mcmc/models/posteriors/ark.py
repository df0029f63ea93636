"""``arK-arK``: autoregression of order K with a half-Cauchy noise scale.

Stan model (posteriordb ``arK``)::

    parameters { real alpha; array[K] real beta; real<lower=0> sigma; }
    model { alpha ~ normal(0, 10); beta ~ normal(0, 10); sigma ~ cauchy(0, 2.5);
            for (t in (K+1):T) y[t] ~ normal(alpha + Σ_k beta[k] y[t-k], sigma); }

Unconstrained ``x = (alpha, beta[1..K], log sigma)``, log-Jacobian ``log sigma``.
With ``n = T - K`` residuals ``r_t``::

    E = alpha²/200 + |beta|²/200 + log(1 + (sigma/2.5)²) + n log sigma
        + ½ Σ r_t²/sigma² - log sigma
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
import numpy as np

from ladder_mcmc.arrays import namespace
from ladder_mcmc.models.posteriors.posterior import Posterior, count, indexed, vector


@attrs.frozen(eq=False, repr=False)
class ArK(Posterior):
    """AR(K) regression; ``dim = K + 2`` (7 for the posteriordb data).

    Parameters
    ----------
    y : array (T,)
        The series.
    k : int
        The order ``K`` (``T > K``).
    reference : Reference, optional
        Reference summaries of ``alpha, beta[1..K], sigma``.

    Examples
    --------
    >>> t = ArK.from_data({"K": 1, "T": 3, "y": [0.0, 1.0, 0.5]})
    >>> t.dim, t.param_names
    (3, ('alpha', 'beta[1]', 'sigma'))
    """

    name = "arK-arK"
    y: np.ndarray
    k: int
    reference: Any = None
    lags: np.ndarray = attrs.field(init=False)  # (T-K, K): lags[i, k-1] = y[t-k], t = K+1+i
    response: np.ndarray = attrs.field(init=False)  # y[K+1..T]

    def __attrs_post_init__(self) -> None:
        n = self.y.shape[0] - self.k
        lags = np.column_stack([self.y[self.k - m : self.k - m + n] for m in range(1, self.k + 1)])
        object.__setattr__(self, "lags", lags.reshape(n, self.k))
        object.__setattr__(self, "response", self.y[self.k :])

    @classmethod
    def from_data(cls, data: Mapping[str, Any], reference: Any = None) -> ArK:
        """Build from a posteriordb data dict ``{"K", "T", "y"}``."""
        k = count(data, "K", 1)
        t = count(data, "T", k + 1)
        return cls(vector(data, "y", t), k, reference)

    @property
    def dim(self) -> int:  # type: ignore[override]
        return self.k + 2

    @property
    def param_names(self) -> tuple[str, ...]:
        return ("alpha",) + indexed("beta", self.k) + ("sigma",)

    def _energy_and_grad(self, x):
        xp = namespace(x, self.lags, self.response)
        k = self.k
        alpha, beta, log_sigma = x[:, 0], x[:, 1 : k + 1], x[:, k + 1]
        n = self.response.shape[0]
        resid = (
            self.response - alpha[:, None] - xp.einsum("ij,kj->ik", beta, self.lags)
        )  # (chains, n)
        prec = xp.exp(-2.0 * log_sigma)
        ss = xp.einsum("ij,ij->i", resid, resid)
        q = xp.exp(2.0 * log_sigma) / 2.5**2
        e = (
            alpha**2 / 200.0
            + xp.einsum("ij,ij->i", beta, beta) / 200.0
            + xp.log1p(q)
            + (n - 1) * log_sigma
            + 0.5 * ss * prec
        )
        g_alpha = alpha / 100.0 - prec * resid.sum(axis=1)
        g_beta = beta / 100.0 - prec[:, None] * (xp.einsum("ij,jk->ik", resid, self.lags))
        g_log_sigma = 2.0 * q / (1.0 + q) + (n - 1) - ss * prec
        return e, xp.concatenate([g_alpha[:, None], g_beta, g_log_sigma[:, None]], axis=1)

    def _constrain(self, x):
        return np.column_stack([x[:, : self.k + 1], np.exp(x[:, self.k + 1])])
