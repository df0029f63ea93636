"""One-step invariance: a statistical check for continuous kernels.

:func:`assert_one_step_invariance` starts many chains at exact draws of the
extended target, takes one step, and tests that the law did not change (the model
is TensorFlow Probability's target-conservation test; ``scipy`` is imported when
it runs).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from ladder_mcmc.ladder import batch
from ladder_mcmc.ladder.kernel import Ladder
from ladder_mcmc.ladder.maps import ReversibleMap
from ladder_mcmc.verify.jacobian import _xv_state

__all__ = ["InvarianceReport", "assert_one_step_invariance", "default_features"]


@attrs.frozen(eq=False)
class InvarianceReport:
    """What :func:`assert_one_step_invariance` measured.

    Attributes
    ----------
    n_chains : int
    features : tuple of str
        Names of the tested features (coordinates, then projections).
    statistics, p_values : arrays (features,)
        Two-sample Kolmogorov–Smirnov statistic and p-value per feature.
    threshold : float
        Per-test level ``false_alarm / n_tests`` (Bonferroni).
    moved_fraction : float
        Fraction of chains whose draw changed in the step.
    seconds : float
    """

    n_chains: int
    features: tuple[str, ...]
    statistics: np.ndarray
    p_values: np.ndarray
    threshold: float
    moved_fraction: float
    seconds: float

    @property
    def ok(self) -> bool:
        return bool(np.all(self.p_values >= self.threshold))


def default_features(map_: ReversibleMap, ks: Any) -> tuple[list[str], np.ndarray]:
    """The features one-step invariance tests, from a kernel state.

    ``PhaseState``-like states (fields ``x``, ``v``): every coordinate of the
    position ``x`` and of the physical momentum ``d·v``. Array states: every
    entry. Other states: every entry of every array field.
    """
    state, d = ks.state, np.asarray(ks.direction, dtype=float)
    n = len(d)
    if _xv_state(state):
        x = np.asarray(state.x, dtype=float).reshape(n, -1)
        pv = d[:, None] * np.asarray(state.v, dtype=float).reshape(n, -1)
        names = [f"x[{k}]" for k in range(x.shape[1])] + [f"d·v[{k}]" for k in range(pv.shape[1])]
        return names, np.concatenate([x, pv], axis=1)
    cols, names = [], []
    for li, leaf in enumerate(batch.leaves(state)):
        arr = np.asarray(leaf, dtype=float).reshape(n, -1)
        cols.append(arr)
        names += [f"leaf{li}[{k}]" for k in range(arr.shape[1])]
    return names, np.concatenate(cols, axis=1)


def assert_one_step_invariance(
    kernel: Ladder,
    draw_exact: Callable[[int, np.random.Generator], Any],
    n_chains: int = 200_000,
    seed: int = 0,
    false_alarm: float = 1e-6,
    features: Callable[[Any], np.ndarray] | None = None,
    n_projections: int = 4,
    min_moved: float = 0.01,
) -> InvarianceReport:
    """Statistical: one kernel step from the target leaves the target unchanged.

    Starts ``n_chains`` chains at exact draws of the extended target
    ``p(ζ, d)``, applies one synchronous :meth:`Ladder.step`, and compares the
    result with ``n_chains`` fresh exact draws by two-sample Kolmogorov–Smirnov
    tests (:func:`scipy.stats.ks_2samp`) on every feature — for
    ``PhaseState``-like states every coordinate of the position ``x`` and of the
    physical momentum ``d·v`` — and on ``n_projections`` random projections of
    the standardised features. This needs no detailed balance: it is valid for
    every kernel that should keep ``p`` invariant (the test of TensorFlow
    Probability's MCMC suite).

    The tests are Bonferroni-corrected: each at level ``false_alarm / m`` for
    ``m`` tests, so a correct kernel fails with probability at most
    ``false_alarm`` (with a fixed seed the outcome is deterministic). The
    kernel must also *move*: at least ``min_moved`` of the chains must change
    their draw, so the identity kernel cannot pass.

    Power (measured on a 2-d Gaussian, ``docs/verification.md``): a relative error
    ``r`` in one feature's variance is caught reliably from about ``n_chains ≈
    1500 / r²`` (a variance 15 % wrong: 10 of 10 seeds at 50 000 chains, 10 % wrong:
    0 of 10; at 20 000 chains: 30 % 10/10, 20 % 5/10; a map whose momentum law has
    variance 1.3 against its refresh's 1, which leaves the momenta's variance 12 %
    off after one step: 0/5 at 20 000, 4/5 at 50 000, 5/5 at 100 000 and 200 000).
    The default, 200 000, catches errors down to about 9 %. Bugs of the acceptance
    rule or a missing leapfrog half-kick are far below that (docs/design.md §7:
    about 10⁶ chains): use the exact checks and :func:`assert_map` for those.

    Parameters
    ----------
    kernel : Ladder
        The kernel (its ``init`` and ``step`` are used).
    draw_exact : callable
        ``(n, rng) -> init`` such that ``kernel.init(init, rng)`` is an exact
        draw of ``p(ζ, d)``. For leapfrog kernels exact draws of the positions
        suffice (``target.sample``): ``init`` draws ``v ~ N(0, M)`` and ``d``
        uniformly.
    n_chains : int
        Chains in each sample (see the power above to size it).
    seed : int
        Seeds everything.
    false_alarm : float
        Total probability that a correct kernel fails.
    features : callable, optional
        ``kernel_state -> array (chains, m)``; default :func:`default_features`.
    n_projections : int
        Random projections tested besides the coordinates.
    min_moved : float
        Smallest fraction of chains whose draw must change.

    Returns
    -------
    InvarianceReport

    Raises
    ------
    AssertionError
        Naming the feature with the smallest p-value, its KS statistic and the
        threshold; or saying the kernel did not move.
    """
    from scipy.stats import ks_2samp

    start = time.perf_counter()
    rng = np.random.default_rng(seed)
    ks0 = kernel.init(draw_exact(n_chains, rng), rng)
    ks1, _ = kernel.step(ks0, rng)
    ref = kernel.init(draw_exact(n_chains, rng), rng)

    before, after = kernel.map.draw(ks0.state), kernel.map.draw(ks1.state)
    changed = np.zeros(n_chains, dtype=bool)
    for a, b in zip(batch.leaves(before), batch.leaves(after), strict=True):
        changed |= ~(
            np.asarray(a).reshape(n_chains, -1) == np.asarray(b).reshape(n_chains, -1)
        ).all(axis=1)
    moved = float(changed.mean())
    if moved < min_moved:
        raise AssertionError(
            f"the kernel moved only {moved:.2%} of the chains (need at least {min_moved:.2%}): "
            "a kernel that does not move passes any invariance test"
        )

    if features is None:
        names, f_after = default_features(kernel.map, ks1)
        _, f_ref = default_features(kernel.map, ref)
    else:
        f_after = np.asarray(features(ks1), dtype=float).reshape(n_chains, -1)
        f_ref = np.asarray(features(ref), dtype=float).reshape(n_chains, -1)
        names = [f"f[{k}]" for k in range(f_after.shape[1])]
    mean, std = f_ref.mean(axis=0), f_ref.std(axis=0)
    std = np.where(std > 0, std, 1.0)
    directions = np.random.default_rng([seed, 1]).standard_normal((f_ref.shape[1], n_projections))
    directions /= np.linalg.norm(directions, axis=0, keepdims=True)
    f_after = np.concatenate([f_after, ((f_after - mean) / std) @ directions], axis=1)
    f_ref = np.concatenate([f_ref, ((f_ref - mean) / std) @ directions], axis=1)
    names = [*names, *(f"projection[{k}]" for k in range(n_projections))]

    stats, pvals = np.empty(len(names)), np.empty(len(names))
    for k in range(len(names)):
        res = ks_2samp(f_after[:, k], f_ref[:, k])
        stats[k], pvals[k] = res.statistic, res.pvalue
    threshold = false_alarm / len(names)
    report = InvarianceReport(
        n_chains=n_chains,
        features=tuple(names),
        statistics=stats,
        p_values=pvals,
        threshold=threshold,
        moved_fraction=moved,
        seconds=time.perf_counter() - start,
    )
    if not report.ok:
        k = int(np.argmin(pvals))
        bad = int((pvals < threshold).sum())
        raise AssertionError(
            f"one step changed the distribution of {names[k]}: KS statistic {stats[k]:.4f}, "
            f"p-value {pvals[k]:.3g} < {threshold:.3g} (= false_alarm {false_alarm:g} / "
            f"{len(names)} tests; {bad} feature(s) rejected, {n_chains} chains)"
        )
    return report
