"""The printed summary and the ArviZ export."""

import numpy as np
import pytest

from ladder_mcmc import lahmc, sample
from ladder_mcmc.summary import rank_normalize, summary, to_inference_data
from ladder_mcmc.targets import IllConditionedGaussian

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
    for word in ("a", "mean", "ess_bulk", "r_hat", "transitions: F", "warm-up"):
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
    from ladder_mcmc.diagnostics import effective_sample_size
    from ladder_mcmc.summary import min_bulk_ess

    x = np.random.default_rng(3).standard_normal((400, 4, 3)).cumsum(axis=0) * 0.1
    x[:, :, 1] = np.random.default_rng(4).standard_normal((400, 4))
    each = [effective_sample_size(rank_normalize(q)) for q in (x, x * x)]
    assert min_bulk_ess(x) == min(float(np.min(e)) for e in each)
    assert min_bulk_ess(x) < float(np.max(each[0]))  # the min, not any ESS
