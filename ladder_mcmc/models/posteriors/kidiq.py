"""``kidiq-kidscore_momiq``: regression of a child's test score on the mother's IQ.

Stan model (posteriordb ``kidscore_momiq``)::

    parameters { vector[2] beta; real<lower=0> sigma; }
    model { sigma ~ cauchy(0, 2.5);
            kid_score ~ normal(beta[1] + beta[2] * mom_iq, sigma); }

``beta`` has a flat (improper) prior. Unconstrained ``x = (beta[1], beta[2], log sigma)``,
log-Jacobian ``log sigma``::

    E = log(1 + (sigma/2.5)²) + N log sigma + ½ Σ r_n²/sigma² - log sigma
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
import numpy as np

from ladder_mcmc.arrays import namespace
from ladder_mcmc.models.posteriors.posterior import Posterior, count, vector


@attrs.frozen(eq=False, repr=False)
class KidscoreMomiq(Posterior):
    """Simple linear regression; ``dim = 3``.

    Parameters
    ----------
    kid_score, mom_iq : arrays (N,)
        Response and predictor.
    reference : Reference, optional
        Reference summaries of ``beta[1], beta[2], sigma``.

    Examples
    --------
    >>> t = KidscoreMomiq.from_data({"N": 2, "kid_score": [90, 100], "mom_iq": [95, 110]})
    >>> t.dim
    3
    """

    name = "kidiq-kidscore_momiq"
    kid_score: np.ndarray
    mom_iq: np.ndarray
    reference: Any = None
    param_names = ("beta[1]", "beta[2]", "sigma")
    dim = 3

    @classmethod
    def from_data(cls, data: Mapping[str, Any], reference: Any = None) -> KidscoreMomiq:
        """Build from a posteriordb data dict (uses ``N``, ``kid_score``, ``mom_iq``)."""
        n = count(data, "N", 1)
        return cls(vector(data, "kid_score", n), vector(data, "mom_iq", n), reference)

    def _energy_and_grad(self, x):
        xp = namespace(x, self.kid_score, self.mom_iq)
        b1, b2, log_sigma = x.T
        n = self.kid_score.shape[0]
        resid = self.kid_score - b1[:, None] - b2[:, None] * self.mom_iq  # (chains, N)
        prec = xp.exp(-2.0 * log_sigma)
        q = xp.exp(2.0 * log_sigma) / 2.5**2
        ss = xp.einsum("ij,ij->i", resid, resid)
        e = xp.log1p(q) + (n - 1) * log_sigma + 0.5 * ss * prec
        g = xp.stack(
            [
                -prec * resid.sum(axis=1),
                -prec * xp.einsum("ij,j->i", resid, self.mom_iq),
                2.0 * q / (1.0 + q) + (n - 1) - ss * prec,
            ],
            axis=1,
        )
        return e, g

    def _constrain(self, x):
        return np.column_stack([x[:, :2], np.exp(x[:, 2])])
