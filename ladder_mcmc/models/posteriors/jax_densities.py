"""JAX log densities of the posteriordb targets, for autodiff checks and JAX samplers.

:func:`jax_log_density` turns a target into ``log p(x) = -E(x)`` of one unconstrained
point, written term for term after the target's numpy energy: same parametrisation,
same Stan Jacobian, same dropped constants, so the two agree to rounding and
``jax.grad`` of it checks the hand-derived gradients. JAX is an optional dependency,
imported only when :func:`jax_log_density` is called.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ladder_mcmc.models.posteriors.ark import ArK
from ladder_mcmc.models.posteriors.arma import Arma11
from ladder_mcmc.models.posteriors.blr import Blr
from ladder_mcmc.models.posteriors.eight_schools import (
    EightSchoolsCentered,
    EightSchoolsNoncentered,
)
from ladder_mcmc.models.posteriors.garch import Garch11
from ladder_mcmc.models.posteriors.gauss_mix import LowDimGaussMix
from ladder_mcmc.models.posteriors.kidiq import KidscoreMomiq
from ladder_mcmc.models.posteriors.posterior import Posterior

JAX_HINT = "jax_log_density needs JAX: pip install 'ladder_mcmc[jax]'"

# Each builder takes (target, jax) and returns log p of one point x (dim,). Data arrays
# are turned into jnp constants when the density is called, so they take the float
# precision in force then (float64 under ``jax.enable_x64(True)``).
# Shared pieces, with the numpy targets' names: log1p(q), q = (sigma/scale)², is the
# half-Cauchy(0, scale) term; log_inv_logit(u) = -log(1 + e^-u), log1m_inv_logit(u) =
# -log(1 + e^u), as in transforms.py.


def _eight_schools(target: EightSchoolsNoncentered, jax: Any) -> Callable:
    jnp, j = jax.numpy, target.y.shape[0]

    def log_p(x):
        y, sigma = jnp.asarray(target.y), jnp.asarray(target.sigma)
        tt, mu, log_tau = x[:j], x[j], x[j + 1]
        tau = jnp.exp(log_tau)
        theta = tt * tau + mu
        r = (theta - y) / sigma**2
        q = (tau / 5.0) ** 2
        e = (
            0.5 * jnp.dot(tt, tt)
            + 0.5 * jnp.dot(r, theta - y)
            + mu**2 / 50.0
            + jnp.log1p(q)
            - log_tau  # Jacobian of tau = exp(x)
        )
        return -e

    return log_p


def _eight_schools_centered(target: EightSchoolsCentered, jax: Any) -> Callable:
    jnp, j = jax.numpy, target.y.shape[0]

    def log_p(x):
        y, sigma = jnp.asarray(target.y), jnp.asarray(target.sigma)
        theta, mu, log_tau = x[:j], x[j], x[j + 1]
        d = theta - mu
        r = (theta - y) / sigma**2
        e = (
            0.5 * jnp.dot(r, theta - y)
            + 0.5 * jnp.dot(d, d) * jnp.exp(-2.0 * log_tau)
            + (j - 1) * log_tau  # J log tau (theta's prior) - log tau (Jacobian)
            + mu**2 / 50.0
            + jnp.log1p(jnp.exp(2.0 * log_tau) / 25.0)
        )
        return -e

    return log_p


def _ark(target: ArK, jax: Any) -> Callable:
    jnp, k, n = jax.numpy, target.k, target.response.shape[0]

    def log_p(x):
        lags, response = jnp.asarray(target.lags), jnp.asarray(target.response)
        alpha, beta, log_sigma = x[0], x[1 : k + 1], x[k + 1]
        resid = response - alpha - lags @ beta
        q = jnp.exp(2.0 * log_sigma) / 2.5**2
        e = (
            alpha**2 / 200.0
            + jnp.dot(beta, beta) / 200.0
            + jnp.log1p(q)
            + (n - 1) * log_sigma  # n log sigma (likelihood) - log sigma (Jacobian)
            + 0.5 * jnp.dot(resid, resid) * jnp.exp(-2.0 * log_sigma)
        )
        return -e

    return log_p


def _garch(target: Garch11, jax: Any) -> Callable:
    jnp, sigma1 = jax.numpy, target.sigma1

    def log_inv_logit(u):
        return -jnp.logaddexp(0.0, -u)

    def log1m_inv_logit(u):
        return -jnp.logaddexp(0.0, u)

    def log_p(x):
        y = jnp.asarray(target.y)
        mu, u0, u1, u2 = x[0], x[1], x[2], x[3]
        a0, a1, s2 = jnp.exp(u0), jnp.exp(log_inv_logit(u1)), jnp.exp(log_inv_logit(u2))
        b1 = (1.0 - a1) * s2
        e = y - mu

        def step(h_prev, e_prev):  # h_t = beta1 h_{t-1} + (alpha0 + alpha1 e_{t-1}²)
            h = b1 * h_prev + (a0 + a1 * e_prev**2)
            return h, h

        h1 = jnp.asarray(sigma1**2, dtype=x.dtype)
        _, h_rest = jax.lax.scan(step, h1, e[:-1])
        h = jnp.concatenate([h1[None], h_rest])
        z2 = e * e / h
        log_jac = u0 + log_inv_logit(u1) + 2.0 * log1m_inv_logit(u1)
        log_jac = log_jac + log_inv_logit(u2) + log1m_inv_logit(u2)
        return -(0.5 * jnp.sum(jnp.log(h) + z2) - log_jac)

    return log_p


def _gauss_mix(target: LowDimGaussMix, jax: Any) -> Callable:
    jnp = jax.numpy

    def log_p(x):
        y = jnp.asarray(target.y)
        mu1, gap_log, ls1, ls2, lt = x[0], x[1], x[2], x[3], x[4]
        gap = jnp.exp(gap_log)
        mu2 = mu1 + gap
        s1, s2 = jnp.exp(ls1), jnp.exp(ls2)
        log_theta, log1m_theta = -jnp.logaddexp(0.0, -lt), -jnp.logaddexp(0.0, lt)
        z1 = (y - mu1) / s1
        z2 = (y - mu2) / s2
        l1 = (log_theta - ls1) - 0.5 * z1 * z1
        l2 = (log1m_theta - ls2) - 0.5 * z2 * z2
        log_lik = jnp.sum(jnp.logaddexp(l1, l2))
        log_prior = -(mu1**2 + mu2**2 + s1**2 + s2**2) / 8.0
        log_prior = log_prior + 4.0 * (log_theta + log1m_theta)  # beta(5, 5)
        log_jac = gap_log + ls1 + ls2 + log_theta + log1m_theta
        return log_lik + log_prior + log_jac

    return log_p


def _blr(target: Blr, jax: Any) -> Callable:
    jnp, d, n = jax.numpy, target.design.shape[1], target.y.shape[0]

    def log_p(x):
        design, y = jnp.asarray(target.design), jnp.asarray(target.y)
        beta, log_sigma = x[:d], x[d]
        resid = y - design @ beta
        e = (
            jnp.dot(beta, beta) / 200.0
            + jnp.exp(2.0 * log_sigma) / 200.0
            + (n - 1) * log_sigma  # N log sigma (likelihood) - log sigma (Jacobian)
            + 0.5 * jnp.dot(resid, resid) * jnp.exp(-2.0 * log_sigma)
        )
        return -e

    return log_p


def _arma(target: Arma11, jax: Any) -> Callable:
    jnp, n_t = jax.numpy, target.y.shape[0]

    def log_p(x):
        y = jnp.asarray(target.y)
        mu, phi, theta, log_sigma = x[0], x[1], x[2], x[3]

        def step(err_prev, c):  # err_t = (y_t - mu - phi y_{t-1}) - theta err_{t-1}
            err = -theta * err_prev + c
            return err, err

        err1 = y[0] - (mu + phi * mu)
        _, err_rest = jax.lax.scan(step, err1, y[1:] - mu - phi * y[:-1])
        err = jnp.concatenate([err1[None], err_rest])
        q = jnp.exp(2.0 * log_sigma) / 2.5**2
        e = (
            mu**2 / 200.0
            + (phi**2 + theta**2) / 8.0
            + jnp.log1p(q)
            + (n_t - 1) * log_sigma  # T log sigma (likelihood) - log sigma (Jacobian)
            + 0.5 * jnp.dot(err, err) * jnp.exp(-2.0 * log_sigma)
        )
        return -e

    return log_p


def _kidiq(target: KidscoreMomiq, jax: Any) -> Callable:
    jnp, n = jax.numpy, target.kid_score.shape[0]

    def log_p(x):
        kid_score, mom_iq = jnp.asarray(target.kid_score), jnp.asarray(target.mom_iq)
        b1, b2, log_sigma = x[0], x[1], x[2]
        resid = kid_score - b1 - b2 * mom_iq
        q = jnp.exp(2.0 * log_sigma) / 2.5**2
        e = (
            jnp.log1p(q)
            + (n - 1) * log_sigma  # N log sigma (likelihood) - log sigma (Jacobian)
            + 0.5 * jnp.dot(resid, resid) * jnp.exp(-2.0 * log_sigma)
        )
        return -e

    return log_p


BUILDERS: dict[type[Posterior], Callable[[Any, Any], Callable]] = {
    EightSchoolsNoncentered: _eight_schools,
    EightSchoolsCentered: _eight_schools_centered,
    ArK: _ark,
    Garch11: _garch,
    LowDimGaussMix: _gauss_mix,
    Blr: _blr,
    Arma11: _arma,
    KidscoreMomiq: _kidiq,
}
"""Target class -> builder ``(target, jax) -> log_p``; the class must match exactly."""


def jax_log_density(target: Posterior) -> Callable[[Any], Any]:
    """The JAX log density ``x -> -E(x)`` of a posteriordb target at one unconstrained point.

    ``x`` is Stan's unconstrained parametrisation (the target's, e.g. ``log sigma`` for
    a scale), and the log density includes Stan's Jacobian ``log |dθ/dx|`` and drops the
    same normalising constants as the target's energy, so it equals
    ``-target.energy(x[None])[0]`` up to rounding. It is a pure ``jax.numpy`` function,
    ready for ``jax.grad``, ``jax.jit`` and ``jax.vmap``.

    Evaluate it in float64: under ``with jax.enable_x64(True):`` (this function leaves
    JAX's global configuration alone). The data are converted when it is called, so in
    float32 mode both data and result are float32 and far less accurate.

    Parameters
    ----------
    target : Posterior
        One of the seven targets of :mod:`ladder_mcmc.models.posteriors`, or
        :class:`~ladder_mcmc.models.posteriors.EightSchoolsCentered` (exact class).

    Returns
    -------
    callable
        ``log_p(x)``: a float array of shape ``(target.dim,)`` -> a scalar.

    Raises
    ------
    ValueError
        If ``target``'s class has no JAX version; from ``log_p``, if ``x`` is not of
        shape ``(target.dim,)``.
    ImportError
        If JAX is not installed (``pip install 'ladder_mcmc[jax]'``).

    Examples
    --------
    >>> import jax
    >>> import numpy as np
    >>> from ladder_mcmc.models import posteriors
    >>> target = posteriors.load("kidiq-kidscore_momiq")
    >>> log_p = posteriors.jax_log_density(target)
    >>> x = np.array([26.0, 0.6, 2.9])
    >>> with jax.enable_x64(True):
    ...     value, grad = jax.value_and_grad(log_p)(x)
    >>> bool(np.isclose(value, -target.energy(x[None])[0], rtol=1e-12))
    True
    >>> bool(np.allclose(grad, -target.grad(x[None])[0], rtol=1e-9))
    True
    """
    builder = BUILDERS.get(type(target))
    if builder is None:
        supported = ", ".join(cls.__name__ for cls in BUILDERS)
        raise ValueError(f"no JAX log density for {type(target).__name__}; supported: {supported}")
    try:
        import jax
    except ImportError as err:
        raise ImportError(JAX_HINT) from err
    log_p = builder(target, jax)
    dim = target.dim

    def checked(x):
        x = jax.numpy.asarray(x)
        if x.shape != (dim,):
            raise ValueError(f"{target.name}: x must have shape ({dim},), got {x.shape}")
        return log_p(x)

    checked.__name__ = checked.__qualname__ = f"log_p_{type(target).__name__}"
    checked.__doc__ = f"Log density of {target.name} at one unconstrained point x ({dim},)."
    return checked
