"""The printed summary and the ArviZ export; the statistics equal ArviZ's."""

import numpy as np
import pytest

from ladder_mcmc import lahmc, sample
from ladder_mcmc.diagnostics import (
    ess_bulk,
    ess_tail,
    mcse_mean,
    posterior_statistics,
    rank_normalize,
    rank_rhat,
    summary,
    to_inference_data,
)
from ladder_mcmc.diagnostics.ess import STATISTICS
from ladder_mcmc.models import IllConditionedGaussian

TARGET = IllConditionedGaussian(3, log_condition=2)


def trace():
    return sample(
        lahmc(TARGET, 0.5, 8, 0.5),
        TARGET.sample(8, np.random.default_rng(0)),
        400,
        seed=1,
        warmup=100,
    )


def test_summary_table():
    s = summary(trace(), names=["a", "b", "c"])
    text = str(s)
    for word in ("a", "mean", "ess_bulk", "ess_tail", "mcse_sd", "eti_5%", "median", "r_hat"):
        assert word in text
    for word in ("transitions: F", "warm-up"):
        assert word in text
    # E[x] = 0 within 4 MCSE, sd near the truth, chains agree
    assert np.all(np.abs(s.mean) < 4 * s.mcse)
    np.testing.assert_allclose(s.sd, np.sqrt(TARGET.variances), rtol=0.25)
    assert np.all(s.r_hat < 1.05) and np.all(s.ess_bulk > 100)
    with pytest.raises(ValueError, match="names has 2 entries for 3"):
        summary(trace(), names=["a", "b"])


def test_rank_normalize_is_standard_normal_scores():
    z = rank_normalize(np.arange(12.0).reshape(6, 2))
    assert z.shape == (6, 2)
    assert abs(z.mean()) < 1e-12 and np.all(np.diff(np.sort(z.ravel())) > 0)


def test_to_inference_data():
    az = pytest.importorskip("arviz")
    idata = to_inference_data(trace())
    assert isinstance(idata, az.InferenceData)
    assert idata.posterior["x0"].shape == (8, 400)
    assert "rung" in idata.sample_stats


def test_min_bulk_ess_is_the_smallest_bulk_ess_of_x_and_x_squared():
    from ladder_mcmc.diagnostics import effective_sample_size, min_bulk_ess

    x = np.random.default_rng(3).standard_normal((400, 4, 3)).cumsum(axis=0) * 0.1
    x[:, :, 1] = np.random.default_rng(4).standard_normal((400, 4))
    each = [effective_sample_size(rank_normalize(q)) for q in (x, x * x)]
    assert min_bulk_ess(x) == min(float(np.min(e)) for e in each)
    assert min_bulk_ess(x) < float(np.max(each[0]))  # the min, not any ESS


# ------------------------------------------------------------------ equal to ArviZ
def _chains(steps, chains, dim, seed):
    return np.random.default_rng(seed).standard_normal((steps, chains, dim))


def _scale_case():
    x = _chains(1000, 4, 2, 0)
    x[:, 3] *= 5.0  # three N(0, 1) chains and one N(0, 25)
    return x


def _constant_chain():
    x = _chains(101, 4, 2, 1)
    x[:, 2] = 0.7
    return x


def _drifting_many_chains():
    walk = np.cumsum(_chains(2001, 16, 3, 2), axis=0) * 0.05
    return walk + _chains(2001, 16, 3, 3)


CASES = {
    "3 N(0,1) + N(0,25)": _scale_case,
    "2 chains x 7 steps": lambda: _chains(7, 2, 3, 4),
    "4 steps (the least)": lambda: _chains(4, 3, 1, 5),
    "one chain": lambda: _chains(50, 1, 2, 6),
    "16 chains x 2001 steps, drifting": _drifting_many_chains,
    "a constant chain": _constant_chain,
    "constant parameter": lambda: np.full((40, 3, 2), 3.0),
    "Cauchy (heavy tails)": lambda: np.random.default_rng(7).standard_cauchy((500, 4, 3)),
    "ties (a discrete parameter)": lambda: (
        np.random.default_rng(8).integers(0, 3, (60, 4, 2)) * 1.0
    ),
}


def arviz_statistics(az, x):
    """``arviz.summary`` of draws (steps, chains, dim), unrounded, as a dict of columns."""
    posterior = {"x": np.swapaxes(x, 0, 1)}
    by_mean = az.summary(posterior, hdi_prob=0.9, round_to="none")
    by_median = az.summary(posterior, hdi_prob=0.9, stat_focus="median", round_to="none")
    return {
        c: (by_median if c in ("eti_5%", "median", "eti_95%") else by_mean)[c].to_numpy(float)
        for c in STATISTICS
    }


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # ArviZ's 0/0 on a constant parameter
@pytest.mark.parametrize("case", CASES)
def test_statistics_equal_arviz_summary(case):
    az = pytest.importorskip("arviz")
    x = CASES[case]()
    ours, theirs = posterior_statistics(x), arviz_statistics(az, x)
    for column in STATISTICS:
        np.testing.assert_allclose(
            ours[column], theirs[column], rtol=1e-8, atol=0, equal_nan=True, err_msg=column
        )


def test_scale_case_r_hat_is_arviz_s_not_one():
    """The folded part: the bulk R-hat alone says 1.00 here, ArviZ about 1.25."""
    az = pytest.importorskip("arviz")
    x = _scale_case()[:, :, 0]
    assert rank_rhat(x) == pytest.approx(float(az.rhat(x.T)), rel=1e-8)
    assert rank_rhat(x) > 1.2


def test_one_statistic_functions_equal_arviz_functions():
    az = pytest.importorskip("arviz")
    for x in (_scale_case()[:, :, 1], _chains(300, 3, 1, 9)[:, :, 0], _constant_chain()[:-1, :, 0]):
        for ours, theirs in (
            (rank_rhat(x), az.rhat(x.T)),
            (ess_bulk(x), az.ess(x.T, method="bulk")),
            (ess_tail(x), az.ess(x.T, method="tail")),
            (mcse_mean(x), az.mcse(x.T, method="mean")),
        ):  # (az.mcse(method="sd") fails on arrays with numba installed: see the summary test)
            assert ours == pytest.approx(float(np.ravel(theirs)[0]), rel=1e-8)


def test_summary_columns_equal_arviz_summary_of_the_exported_trace():
    """Same default names (x0, x1, …) in summary and to_inference_data; same numbers."""
    az = pytest.importorskip("arviz")
    tr = trace()
    s = summary(tr)
    table = az.summary(to_inference_data(tr), hdi_prob=0.9, round_to="none")
    assert s.names == list(table.index) == ["x0", "x1", "x2"]
    columns = s.columns()
    assert list(columns) == list(STATISTICS)
    for column in ("mean", "sd", "mcse_mean", "mcse_sd", "ess_bulk", "ess_tail", "r_hat"):
        np.testing.assert_allclose(columns[column], table[column].to_numpy(float), rtol=1e-8)
    np.testing.assert_array_equal(s.mcse, s.mcse_mean)


def test_statistics_block_by_block_equal_all_at_once(monkeypatch):
    """Long runs are read a few parameters at a time: the same numbers."""
    import ladder_mcmc.diagnostics.ess as d

    x = _drifting_many_chains()[:500]
    whole = posterior_statistics(x)
    monkeypatch.setattr(d, "_STAT_BLOCK_ELEMENTS", 1)  # one parameter per block
    for column, values in posterior_statistics(x).items():
        np.testing.assert_array_equal(values, whole[column])


def test_statistics_refuse_bad_input():
    with pytest.raises(ValueError, match="steps, chains"):
        posterior_statistics(np.zeros(5))
    with pytest.raises(ValueError, match="statistics must be among"):
        posterior_statistics(np.zeros((5, 2)), ("ess",))
