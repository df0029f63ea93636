"""A broken variant of ``state_length_lahmc``'s law is caught by the check that every
tuning-free kernel tunes (``tests/unit/hamiltonian/test_every_kernel_tunes.py``).

The mutant is the law as it was before issue 28's fix: the local scale from the raw
gradient, ``√dim / |∇E|``, never capped (and not whitened by the mass). On the 2-d
standard Gaussian its length swings with ``|x|``, rungs fall outside each other's
range, and dual averaging shrinks ``ε`` until the length is clipped at ``max_steps``.
"""

import sys
from pathlib import Path

import numpy as np
import pytest

from ladder_mcmc.hamiltonian.leapfrog_family import auxiliary_lahmc, leapfrog_start
from ladder_mcmc.hamiltonian.state_length import LocalLengthLaw, StateLengthLeapfrog

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit" / "hamiltonian"))
from test_every_kernel_tunes import assert_tunes, gaussian, tuned  # noqa: E402


class RawLengthLaw(LocalLengthLaw):
    """The old default scale: the raw gradient's, uncapped."""

    def local_scale(self, state):
        grad = np.asarray(state.grad, dtype=np.float64)
        with np.errstate(all="ignore"):
            return np.sqrt(grad.shape[1]) / np.linalg.norm(grad, axis=1)


def _raw_kernel(dim):
    step, metric, adapt = leapfrog_start(None, None)
    target = gaussian(dim)
    law = RawLengthLaw(step, metric=metric)
    return auxiliary_lahmc(StateLengthLeapfrog(target, step, metric), law, 1.0, 4, adapt)


def test_the_check_catches_the_raw_uncapped_length_law():
    step, non_finite = tuned(_raw_kernel(2), 2)
    assert step < 0.1 and non_finite > 0.1  # what issue 28 saw: ε ≈ 0.01, 15 % and more
    with pytest.raises(AssertionError):
        assert_tunes(_raw_kernel(2), 2)
