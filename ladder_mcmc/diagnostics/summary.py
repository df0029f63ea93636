"""Per-parameter summary of a run: can these draws be trusted?"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import numpy as np

from ladder_mcmc.diagnostics.energy import (
    E_BFMI_LOW,
    NOT_APPLICABLE,
    trace_e_bfmi,
    trace_refresh_fraction,
)
from ladder_mcmc.diagnostics.ess import STATISTICS, effective_sample_size, posterior_statistics
from ladder_mcmc.diagnostics.normal_quantile import normal_quantile


def rank_normalize(draws: np.ndarray) -> np.ndarray:
    """Rank-normalised draws (Vehtari et al. 2021, eq. 14), pooled over chains.

    ``z = Φ⁻¹((r − 3/8) / (S + 1/4))`` with ``r`` the average rank of a draw among
    all ``S`` draws of the same quantity. ``draws`` (steps, chains[, dim]).
    """
    x = np.asarray(draws, dtype=float)
    flat = x.reshape(x.shape[0] * x.shape[1], -1)
    from scipy.stats import rankdata  # imported when first needed: scipy is slow to load

    ranks = rankdata(flat, axis=0)
    z = normal_quantile((ranks - 0.375) / (flat.shape[0] + 0.25))
    return z.reshape(x.shape)


def min_bulk_ess(positions: np.ndarray) -> float:
    """Min over coordinates ``i`` of min(bulk ESS of ``x_i``, bulk ESS of ``x_i²``).

    Bulk ESS = :func:`rank_normalize`, then the split-chain
    :func:`~ladder_mcmc.diagnostics.ess.effective_sample_size` (Vehtari et al. 2021).
    The figure of merit of the NUTS comparison (``benchmarks/results/against_nuts.md``);
    ``positions`` (steps, chains, dim).
    """
    x = np.asarray(positions, dtype=float)
    return float(min(np.min(effective_sample_size(rank_normalize(q))) for q in (x, x * x)))


def default_names(dim: int) -> list[str]:
    """Parameter names when none are given: ``x0, x1, …`` (:func:`summary`,
    :func:`to_inference_data` and the warnings of :mod:`ladder_mcmc.diagnostics.checks`)."""
    return [f"x{i}" for i in range(dim)]


@attrs.frozen(eq=False)
class Summary:
    """Per-parameter statistics and the run's transition fractions.

    The statistics are those of ``arviz.summary`` (ArviZ 0.23), computed by
    :func:`~ladder_mcmc.diagnostics.ess.posterior_statistics`; :meth:`columns`
    gives them under ArviZ's column names.

    Attributes
    ----------
    names : list of str
    mean, sd : arrays (dim,)
        Posterior mean and standard deviation (``ddof = 1``).
    q5, median, q95 : arrays (dim,)
        5 %, 50 % and 95 % quantiles (ArviZ's ``eti_5%``, ``median``, ``eti_95%``).
    mcse_mean, mcse_sd : arrays (dim,)
        Monte Carlo standard errors of the mean (``sd / sqrt(ESS_mean)``) and of the sd.
    ess_bulk, ess_tail : arrays (dim,)
        Bulk ESS (rank-normalised split chains) and tail ESS (5 % and 95 % quantiles).
    r_hat : array (dim,)
        Rank-normalised split R̂, the larger of its bulk and folded parts
        (Vehtari et al. 2021); NaN for one chain.
    fractions : dict
        Transition fractions (``Trace.transition_fractions``).
    grad_evals : float
        Mean gradient evaluations per chain in the sampling phase.
    warmup_grad_evals : float or None
        The same for warm-up.
    non_finite_rungs : int
        Rungs whose energy was not finite (density zero, rejected), over all chains
        and steps of the sampling phase.
    adapted : dict of str, or None
        What warm-up adapted, name → value as printed (``trace.warmup.adapted``).
    e_bfmi : array (chains,) or None
        Each chain's energy Bayesian fraction of missing information, divided by the
        refresh's ``β`` (:func:`~ladder_mcmc.diagnostics.energy.trace_e_bfmi`;
        docs/design.md §6.1), when the trace has energies and its kernel refreshes a
        Gaussian momentum.
    refresh_fraction : array (chains,) or None
        That ``β`` (1 for a full refresh).
    e_bfmi_note : str or None
        Why ``e_bfmi`` is None for a trace with energies (its refresh is not a Gaussian
        momentum refresh).
    relocated : int array (chains,) or None
        How often warm-up moved each chain, idle, to another chain's state
        (``trace.warmup.relocated``).
    switch : str or None
        What the run's ``switch`` decided after warm-up, and why (``trace.switch``).
    """

    names: list[str]
    mean: np.ndarray
    sd: np.ndarray
    q5: np.ndarray
    median: np.ndarray
    q95: np.ndarray
    mcse_mean: np.ndarray
    mcse_sd: np.ndarray
    ess_bulk: np.ndarray
    ess_tail: np.ndarray
    r_hat: np.ndarray
    fractions: dict
    grad_evals: float
    warmup_grad_evals: float | None = None
    non_finite_rungs: int = 0
    adapted: dict | None = None
    e_bfmi: np.ndarray | None = None
    relocated: np.ndarray | None = None
    refresh_fraction: np.ndarray | None = None
    e_bfmi_note: str | None = None
    switch: str | None = None

    @property
    def mcse(self) -> np.ndarray:
        """The Monte Carlo standard error of the mean (``mcse_mean``; the name before
        ``mcse_sd`` was added)."""
        return self.mcse_mean

    def columns(self) -> dict[str, np.ndarray]:
        """The statistics under ``arviz.summary``'s column names, in :data:`STATISTICS` order.

        ``{"mean", "sd", "eti_5%", "median", "eti_95%", "mcse_mean", "mcse_sd",
        "ess_bulk", "ess_tail", "r_hat"}`` → arrays (dim,).
        """
        attrs_of = {"eti_5%": "q5", "eti_95%": "q95"}
        return {name: getattr(self, attrs_of.get(name, name)) for name in STATISTICS}

    def __str__(self) -> str:
        width = max(9, *(len(n) for n in self.names))
        columns = self.columns()
        formats = {
            "mean": 9,
            "sd": 9,
            "eti_5%": 9,
            "median": 9,
            "eti_95%": 9,
            "mcse_mean": 9,
            "mcse_sd": 9,
            "ess_bulk": 8,
            "ess_tail": 8,
            "r_hat": 6,
        }
        head = f"{'parameter':<{width}} " + " ".join(f"{c:>{w}}" for c, w in formats.items())
        lines = [head, "-" * len(head)]

        def cell(name: str, value: float, w: int) -> str:
            if name.startswith("ess"):
                return f"{value:>{w}.0f}"
            if name == "r_hat":
                return f"{value:>{w}.3f}"
            return f"{value:>{w}.{2 if name.startswith('mcse') else 4}g}"

        for i, name in enumerate(self.names):
            cells = " ".join(cell(c, columns[c][i], w) for c, w in formats.items())
            lines.append(f"{name:<{width}} {cells}")
        fr = "  ".join(f"{k} {v:.3f}" for k, v in self.fractions.items())
        lines.append(f"transitions: {fr}")
        cost = f"gradient evaluations per chain: {self.grad_evals:.0f}"
        if self.warmup_grad_evals is not None:
            cost += f" (+ {self.warmup_grad_evals:.0f} in warm-up)"
        lines.append(cost)
        if self.adapted:
            values = ", ".join(f"{k} {v}" for k, v in self.adapted.items())
            lines.append(f"adapted in warm-up: {values}")
        if self.switch:
            lines.append(f"kernel after warm-up: {self.switch}")
        if self.e_bfmi is not None and np.isfinite(self.e_bfmi).any():
            low = np.nanmin(self.e_bfmi)
            beta = self.refresh_fraction
            partial = "" if beta is None or np.all(beta == 1) else "; divided by beta"
            mark = (
                f" (below {E_BFMI_LOW}: the energy is explored slowly)" if low < E_BFMI_LOW else ""
            )
            lines.append(f"E-BFMI: {low:.2f} (lowest chain{partial}){mark}")
        elif self.e_bfmi is None and self.e_bfmi_note:
            lines.append(f"E-BFMI: {self.e_bfmi_note}")
        if self.relocated is not None and np.any(self.relocated):
            moved = ", ".join(str(c) for c in np.flatnonzero(self.relocated))
            lines.append(
                f"warm-up moved idle chains to other chains' states: chain {moved} "
                "(no rung taken in 20 steps in a row)"
            )
        if self.non_finite_rungs:
            lines.append(
                f"non-finite energies: {self.non_finite_rungs} rungs (density zero, rejected)"
            )
        return "\n".join(lines)


def summary(
    trace, names: Sequence[str] | None = None, *, constrained: bool | None = None
) -> Summary:
    """Summarise a trace whose draws are positions (steps, chains, dim).

    Per parameter, what ``arviz.summary`` computes (mean, sd, 5/50/95 %
    quantiles, MCSE of the mean and sd, bulk and tail ESS, rank-normalised split
    R̂ with its folded part; Vehtari et al. 2021), then the transition fractions
    and the gradient evaluations (sampling and warm-up). A target with names
    (``parameters``, :class:`~ladder_mcmc.models.parameters.ParameterSpace`) is
    summarised by its constrained values under its labels (``constrained=False``: the
    unconstrained positions); otherwise default names ``x0, x1, …``. The rows are
    those of ``arviz.summary(to_inference_data(trace))`` (posteriordb's targets label
    them as Stan does, from 1; ArviZ counts from 0).

    Raises
    ------
    ValueError
        If ``names`` does not have one entry per row, or ``constrained=True`` for a
        target without ``parameters``.

    Examples
    --------
    >>> import numpy as np
    >>> from ladder_mcmc import lahmc, sample
    >>> from ladder_mcmc.models import IllConditionedGaussian
    >>> t = IllConditionedGaussian(2, log_condition=1)
    >>> tr = sample(lahmc(t, 0.5, 5, 0.5), t.sample(4, np.random.default_rng(0)), 200, seed=0)
    >>> s = summary(tr)
    >>> s.names
    ['x0', 'x1']
    >>> bool(np.all(s.r_hat < 1.1))
    True
    """
    x, labels = summarised_values(trace, constrained)
    names = list(names) if names is not None else labels
    if len(names) != x.shape[2]:
        raise ValueError(f"names has {len(names)} entries for {x.shape[2]} parameters")
    stats = posterior_statistics(x)
    warm = getattr(trace, "warmup", None)
    return Summary(
        names=names,
        mean=stats["mean"],
        sd=stats["sd"],
        q5=stats["eti_5%"],
        median=stats["median"],
        q95=stats["eti_95%"],
        mcse_mean=stats["mcse_mean"],
        mcse_sd=stats["mcse_sd"],
        ess_bulk=stats["ess_bulk"],
        ess_tail=stats["ess_tail"],
        r_hat=stats["r_hat"],
        fractions=trace.transition_fractions(),
        grad_evals=float(np.mean(trace.grad_evals)),
        warmup_grad_evals=None if warm is None else float(np.mean(warm.grad_evals)),
        non_finite_rungs=int(np.sum(trace.non_finite_rungs)),
        adapted=None if warm is None else adapted_values(warm),
        relocated=None if warm is None else getattr(warm, "relocated", None),
        switch=(getattr(trace, "switch", None) or {}).get("reason"),
        **_energy_fields(trace),
    )


def _energy_fields(trace) -> dict:
    """``e_bfmi``, ``refresh_fraction`` and ``e_bfmi_note`` of :class:`Summary`."""
    if getattr(trace, "step_stats", {}).get("energy") is None:
        return {}
    bfmi = trace_e_bfmi(trace)
    if bfmi is None:
        return {"e_bfmi_note": NOT_APPLICABLE}
    return {"e_bfmi": bfmi, "refresh_fraction": trace_refresh_fraction(trace)}


def summarised_values(trace, constrained: bool | None) -> tuple[np.ndarray, list[str]]:
    """The values (steps, chains, n) :func:`summary` reads, with their default labels:
    the constrained values of a target with ``parameters`` (unless ``constrained`` is
    False), else the positions."""
    x = trace.positions
    space = getattr(trace, "parameters", None)
    if constrained is None:
        constrained = space is not None
    if not constrained:
        plain = space is not None and space.transform is None
        return x, list(space.labels) if plain else default_names(x.shape[2])
    if space is None:
        raise ValueError("constrained=True needs a target with parameters (names and shapes)")
    return space.constrain(x), list(space.labels)


def adapted_values(warm) -> dict[str, str]:
    """What a warm-up adapted (``warm.adapted``), name → value as :class:`Summary` prints it
    (several groups of chains: the range over groups)."""

    def show(value) -> str:
        v = np.atleast_1d(np.asarray(value, dtype=float))
        if v.size > 1 and v.min() != v.max():
            return f"{v.min():.4g}–{v.max():.4g}"
        return f"{v[0]:.4g}"

    out: dict[str, str] = {}
    for name in getattr(warm, "adapted", ()):
        if name == "inverse_mass":
            inv = warm.inverse_mass
            out[name] = (
                "dense"
                if inv is not None and np.ndim(inv) >= 2 + (np.ndim(warm.step_size) > 0)
                else "diagonal"
            )
        elif name == "n_leapfrog":
            out[name] = f"{show(warm.n_leapfrog)} (εM {show(warm.trajectory_length)})"
        else:
            out[name] = show(getattr(warm, name))
    return out


def _sample_stats(trace, kept: int) -> dict[str, np.ndarray]:
    """Per-step figures at the kept steps (steps ``thin − 1, 2 thin − 1, …``), chain ×
    draw."""
    steps = np.arange(kept) * trace.thin + trace.thin - 1

    def at(values) -> np.ndarray:
        return np.swapaxes(np.asarray(values)[steps], 0, 1)

    out = {"rung": at(trace.rungs), "n_steps": at(trace.grad_evals_per_step)}
    stats = getattr(trace, "step_stats", {})
    if "energy" in stats:
        out["energy"] = at(stats["energy"])
    if "acceptance_rate" in stats:
        out["acceptance_rate"] = at(stats["acceptance_rate"])
    diverging = getattr(trace, "diverging", None)
    if diverging is not None:
        out["diverging"] = at(diverging)
    step = _step_sizes(trace)
    if step is not None:
        out["step_size"] = np.broadcast_to(step[:, None], (step.size, kept)).copy()
    return out


def _step_sizes(trace) -> np.ndarray | None:
    """Each chain's step size: the warm-up's (per group), else the kernel's; None."""
    n = trace.rungs.shape[1]
    warm = getattr(trace, "warmup", None)
    if warm is not None and getattr(warm, "step_size", None) is not None:
        size = np.asarray(warm.step_size, dtype=float)
        if size.ndim == 1 and hasattr(warm, "group_of_chain"):
            return size[warm.group_of_chain]
        return np.full(n, float(size))
    size = getattr(trace, "kernel", {}).get("step_size")
    return None if size is None else np.full(n, float(size))


def to_inference_data(trace, names: Sequence[str] | None = None):
    """The trace as an ``arviz.InferenceData`` (requires the ``arviz`` extra).

    For a target with ``parameters``, the ``posterior`` group holds the model's
    variables, constrained, with their shapes (chain × draw × shape) and the
    unconstrained positions go to ``unconstrained_posterior`` (one variable ``x``);
    ``names`` then name the constrained values one by one, as in :func:`summary`.
    Otherwise the positions are the ``posterior``, one variable per parameter
    (``names``, default ``x0, x1, …``). ``sample_stats`` holds, per kept step, what
    ArviZ's energy and divergence plots read: ``energy`` (``−log p`` after the step; for
    leapfrog the Hamiltonian), ``diverging`` (a rung of density zero, or an energy error
    above 1000), ``acceptance_rate`` (the first rung's probability), ``step_size``, the
    ``rung`` code and ``n_steps`` (gradient evaluations of the step). ArviZ's ``bfmi``
    reads ``energy`` undivided: for a partial refresh ``summary(trace).e_bfmi`` is that
    ratio divided by ``β`` (docs/design.md §6.1).
    """
    try:
        import arviz as az
    except ImportError as err:
        raise ImportError(
            "to_inference_data needs ArviZ: pip install 'ladder_mcmc[arviz]'"
        ) from err
    x = np.asarray(trace.positions)
    groups: dict = {}
    unconstrained = None
    space = getattr(trace, "parameters", None)
    if space is not None:
        unconstrained = {"x": np.swapaxes(x, 0, 1)}
        if names is None:
            named = trace.named_draws()
            groups["posterior"] = {n: np.swapaxes(v, 0, 1) for n, v in named.items()}
        else:  # one variable per constrained value, as summary(trace, names) shows them
            values = space.constrain(x)
            names = list(names)
            if len(names) != values.shape[2]:
                raise ValueError(f"names has {len(names)} entries for {values.shape[2]} values")
            groups["posterior"] = {
                n: np.swapaxes(values[:, :, i], 0, 1) for i, n in enumerate(names)
            }
    else:
        names = list(names) if names is not None else default_names(x.shape[2])
        if len(names) != x.shape[2]:
            raise ValueError(f"names has {len(names)} entries for {x.shape[2]} parameters")
        groups["posterior"] = {n: np.swapaxes(x[:, :, i], 0, 1) for i, n in enumerate(names)}
    groups["sample_stats"] = _sample_stats(trace, x.shape[0])
    idata = az.from_dict(**groups)
    if unconstrained is not None:
        idata.add_groups({"unconstrained_posterior": unconstrained})
    return idata
