"""``sblrc-blr``: Bayesian linear regression with a half-normal noise scale.

Stan model (posteriordb ``blr``)::

    parameters { vector[D] beta; real<lower=0> sigma; }
    model { target += normal_lpdf(beta | 0, 10); target += normal_lpdf(sigma | 0, 10);
            target += normal_lpdf(y | X * beta, sigma); }

Unconstrained ``x = (beta[1..D], log sigma)``, log-Jacobian ``log sigma``::

    E = |beta|²/200 + sigma²/200 + N log sigma + ½ |y - X beta|²/sigma² - log sigma
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
import numpy as np

from ladder_mcmc.arrays import namespace
from ladder_mcmc.models.posteriors.posterior import Posterior, count, indexed, vector


@attrs.frozen(eq=False, repr=False)
class Blr(Posterior):
    """Linear regression; ``dim = D + 1`` (6 for the posteriordb data).

    Parameters
    ----------
    design : array (N, D)
        The matrix ``X``.
    y : array (N,)
        Responses.
    reference : Reference, optional
        Reference summaries of ``beta[1..D], sigma``.

    Examples
    --------
    >>> t = Blr.from_data({"N": 2, "D": 1, "X": [[1.0], [2.0]], "y": [1.0, 2.0]})
    >>> t.dim, t.param_names
    (2, ('beta[1]', 'sigma'))
    """

    name = "sblrc-blr"
    design: np.ndarray
    y: np.ndarray
    reference: Any = None

    @classmethod
    def from_data(cls, data: Mapping[str, Any], reference: Any = None) -> Blr:
        """Build from a posteriordb data dict ``{"N", "D", "X", "y"}``."""
        n, d = count(data, "N", 1), count(data, "D", 1)
        design = np.asarray(data.get("X"), dtype=float)
        if design.shape != (n, d) or not np.all(np.isfinite(design)):
            raise ValueError(f"data['X'] must be a finite ({n}, {d}) matrix, got {design.shape}")
        return cls(design, vector(data, "y", n), reference)

    @property
    def dim(self) -> int:  # type: ignore[override]
        return self.design.shape[1] + 1

    @property
    def param_names(self) -> tuple[str, ...]:
        return indexed("beta", self.design.shape[1]) + ("sigma",)

    def _energy_and_grad(self, x):
        xp = namespace(x, self.design, self.y)
        d = self.design.shape[1]
        beta, log_sigma = x[:, :d], x[:, d]
        n = self.y.shape[0]
        resid = self.y - xp.einsum("ij,kj->ik", beta, self.design)  # (chains, N)
        prec = xp.exp(-2.0 * log_sigma)
        sigma2 = xp.exp(2.0 * log_sigma)
        ss = xp.einsum("ij,ij->i", resid, resid)
        e = (
            xp.einsum("ij,ij->i", beta, beta) / 200.0
            + sigma2 / 200.0
            + (n - 1) * log_sigma
            + 0.5 * ss * prec
        )
        g_beta = beta / 100.0 - prec[:, None] * (xp.einsum("ij,jk->ik", resid, self.design))
        g_log_sigma = sigma2 / 100.0 + (n - 1) - ss * prec
        return e, xp.concatenate([g_beta, g_log_sigma[:, None]], axis=1)

    def _constrain(self, x):
        d = self.design.shape[1]
        return np.column_stack([x[:, :d], np.exp(x[:, d])])
