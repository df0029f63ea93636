"""Per-parameter summary of a run: can these draws be trusted?"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import numpy as np
from scipy.special import ndtri
from scipy.stats import rankdata

from ladder_mcmc.diagnostics import effective_sample_size, split_rhat


def rank_normalize(draws: np.ndarray) -> np.ndarray:
    """Rank-normalised draws (Vehtari et al. 2021, eq. 14), pooled over chains.

    ``z = Φ⁻¹((r − 3/8) / (S + 1/4))`` with ``r`` the average rank of a draw among
    all ``S`` draws of the same quantity. ``draws`` (steps, chains[, dim]).
    """
    x = np.asarray(draws, dtype=float)
    flat = x.reshape(x.shape[0] * x.shape[1], -1)
    ranks = rankdata(flat, axis=0)
    z = ndtri((ranks - 0.375) / (flat.shape[0] + 0.25))
    return z.reshape(x.shape)


def min_bulk_ess(positions: np.ndarray) -> float:
    """Min over coordinates ``i`` of min(bulk ESS of ``x_i``, bulk ESS of ``x_i²``).

    Bulk ESS = :func:`rank_normalize`, then the split-chain
    :func:`~ladder_mcmc.diagnostics.effective_sample_size` (Vehtari et al. 2021).
    The figure of merit of ``docs/against-nuts.md`` (issue 6's NUTS comparison);
    ``positions`` (steps, chains, dim).
    """
    x = np.asarray(positions, dtype=float)
    return float(min(np.min(effective_sample_size(rank_normalize(q))) for q in (x, x * x)))


@attrs.frozen(eq=False)
class Summary:
    """Per-parameter statistics and the run's transition fractions.

    Attributes
    ----------
    names : list of str
    mean, sd, mcse, ess_bulk, r_hat : arrays (dim,)
        Posterior mean and standard deviation; Monte Carlo standard error of
        the mean (``sd / sqrt(ESS)``, ESS of the mean without rank
        normalisation); bulk ESS (rank-normalised, split chains); rank-normalised
        split R̂ (Vehtari et al. 2021).
    fractions : dict
        Transition fractions (``Trace.transition_fractions``).
    grad_evals : float
        Mean gradient evaluations per chain in the sampling phase.
    warmup_grad_evals : float or None
        The same for warm-up.
    """

    names: list[str]
    mean: np.ndarray
    sd: np.ndarray
    mcse: np.ndarray
    ess_bulk: np.ndarray
    r_hat: np.ndarray
    fractions: dict
    grad_evals: float
    warmup_grad_evals: float | None = None

    def __str__(self) -> str:
        width = max(9, *(len(n) for n in self.names))
        cols = f"{'mean':>10} {'sd':>10} {'mcse':>9} {'ess_bulk':>9} {'r_hat':>6}"
        head = f"{'parameter':<{width}} {cols}"
        lines = [head, "-" * len(head)]
        for i, name in enumerate(self.names):
            lines.append(
                f"{name:<{width}} {self.mean[i]:>10.4g} {self.sd[i]:>10.4g} "
                f"{self.mcse[i]:>9.2g} {self.ess_bulk[i]:>9.0f} {self.r_hat[i]:>6.3f}"
            )
        fr = "  ".join(f"{k} {v:.3f}" for k, v in self.fractions.items())
        lines.append(f"transitions: {fr}")
        cost = f"gradient evaluations per chain: {self.grad_evals:.0f}"
        if self.warmup_grad_evals is not None:
            cost += f" (+ {self.warmup_grad_evals:.0f} in warm-up)"
        lines.append(cost)
        return "\n".join(lines)


def summary(trace, names: Sequence[str] | None = None) -> Summary:
    """Summarise a trace whose draws are positions (steps, chains, dim).

    Examples
    --------
    >>> import numpy as np
    >>> from ladder_mcmc import lahmc, sample
    >>> from ladder_mcmc.targets import IllConditionedGaussian
    >>> t = IllConditionedGaussian(2, log_condition=1)
    >>> tr = sample(lahmc(t, 0.5, 5, 0.5), t.sample(4, np.random.default_rng(0)), 200, seed=0)
    >>> s = summary(tr)
    >>> s.names
    ['x[0]', 'x[1]']
    >>> bool(np.all(s.r_hat < 1.1))
    True
    """
    x = np.asarray(trace.positions, dtype=float)
    dim = x.shape[2]
    names = list(names) if names is not None else [f"x[{i}]" for i in range(dim)]
    if len(names) != dim:
        raise ValueError(f"names has {len(names)} entries for {dim} parameters")
    sd = x.reshape(-1, dim).std(axis=0, ddof=1)
    ess_mean = np.atleast_1d(effective_sample_size(x))
    z = rank_normalize(x)  # once, for both the bulk ESS and R-hat
    warm = getattr(trace, "warmup", None)
    return Summary(
        names=names,
        mean=x.reshape(-1, dim).mean(axis=0),
        sd=sd,
        mcse=sd / np.sqrt(ess_mean),
        ess_bulk=np.atleast_1d(effective_sample_size(z)),
        r_hat=np.atleast_1d(split_rhat(z)),
        fractions=trace.transition_fractions(),
        grad_evals=float(np.mean(trace.grad_evals)),
        warmup_grad_evals=None if warm is None else float(np.mean(warm.grad_evals)),
    )


def to_inference_data(trace, names: Sequence[str] | None = None):
    """The trace as an ``arviz.InferenceData`` (requires the ``arviz`` extra).

    Positions go to the ``posterior`` group as one variable per parameter
    (chains × draws); per-step rungs and gradient evaluations to ``sample_stats``.
    """
    try:
        import arviz as az
    except ImportError as err:
        raise ImportError(
            "to_inference_data needs ArviZ: pip install 'ladder_mcmc[arviz]'"
        ) from err
    x = np.asarray(trace.positions)
    names = list(names) if names is not None else [f"x{i}" for i in range(x.shape[2])]
    posterior = {n: np.swapaxes(x[:, :, i], 0, 1) for i, n in enumerate(names)}
    stats = {
        "rung": np.swapaxes(trace.rungs, 0, 1),
        "n_grad_evals": np.swapaxes(trace.grad_evals_per_step, 0, 1),
    }
    if trace.thin == 1:
        return az.from_dict(posterior=posterior, sample_stats=stats)
    return az.from_dict(posterior=posterior)
