"""Higher-order symplectic integrators as alternative HMC maps.

A symmetric (palindromic) splitting integrator alternates momentum kicks
``v ← v − b_i ε ∇E(x)`` and position drifts ``x ← x + a_i ε M⁻¹v``::

    kick b_0, drift a_1, kick b_1, …, drift a_m, kick b_m      (b_i = b_{m−i}, a_i = a_{m+1−i})

Each such step is symplectic (volume preserving) and, being palindromic,
reversible through the momentum flip; it costs ``m`` gradient evaluations (the
gradient at the end of a step is reused at the start of the next). Leapfrog is
``b = (½, ½)``, ``a = (1)``.

* :class:`Yoshida4` — Yoshida's (1990) fourth-order "triple jump": three
  leapfrog steps of sizes ``w₁ε, w₀ε, w₁ε`` with ``w₁ = 1/(2 − 2^{1/3})``,
  ``w₀ = −2^{1/3} w₁``; 3 gradients per step, global error ``O(ε⁴)``.
* :class:`McLachlan2` — the two-stage second-order splitting with
  ``λ = 0.1932`` (McLachlan 1995; the value minimising the error constant,
  advocated for HMC by Blanes, Casas & Sanz-Serna 2014); 2 gradients per step.

Both are :class:`~ladder_mcmc.hamiltonian.leapfrog.Leapfrog` maps with another step:
they override its public hook
:meth:`~ladder_mcmc.hamiltonian.leapfrog.Leapfrog.integrate` (and ``cost``) and reuse
its :class:`~ladder_mcmc.hamiltonian.leapfrog.PhaseState`,
:class:`~ladder_mcmc.hamiltonian.metrics.Metric`, flip, validation and ``move``, and
plug into any rule and refresh. Another symmetric splitting is a subclass of
:class:`SymmetricSplitting` with its own ``kicks`` and ``drifts``
(``docs/tutorials/custom-map.md``).
"""

from __future__ import annotations

import attrs
import numpy as np

from ladder_mcmc.arrays import fori_loop
from ladder_mcmc.hamiltonian.leapfrog import Leapfrog, PhaseState
from ladder_mcmc.models.targets import energy_and_grad, gradient


def _splitting(map_, kicks, drifts, x, v, g) -> PhaseState:
    """``n_steps`` palindromic splitting steps from ``(x, v)`` with gradient ``g`` at ``x``.

    The first ``n_steps − 1`` steps are a ``fori_loop`` (``n_steps`` may be traced); the
    last one evaluates the energy with the gradient at its last drift.
    """
    eps = map_.step_size
    vel = map_.metric.velocity
    target = map_.target
    m = len(drifts)

    def one_step(x, v, g, last):
        v = v - (kicks[0] * eps) * g
        e = None
        for i in range(m):
            x = x + (drifts[i] * eps) * vel(v)
            if last and i == m - 1:
                e, g = energy_and_grad(target, x)
            else:
                g = gradient(target, x)
            v = v - (kicks[i + 1] * eps) * g
        return x, v, g, e

    def step(_, xvg):
        return one_step(*xvg, last=False)[:3]

    x, v, g = fori_loop(0, map_.n_steps - 1, step, (x, v, g))
    x, v, g, e = one_step(x, v, g, last=True)
    return PhaseState(x=x, v=v, energy=e, grad=g)


class SymmetricSplitting(Leapfrog):
    """A leapfrog map whose step is the palindromic splitting ``kicks``/``drifts``.

    The base of :class:`Yoshida4` and :class:`McLachlan2`, and the way to add
    another symmetric splitting scheme: subclass it (as a frozen attrs class)
    with the class attributes ``kicks = (b_0, …, b_m)`` and
    ``drifts = (a_1, …, a_m)``; one step is kick ``b_0``, drift ``a_1``, kick
    ``b_1``, …, drift ``a_m``, kick ``b_m`` (in units of ``ε``; consistent if both
    sum to 1). It overrides :meth:`Leapfrog.integrate` and ``cost``
    (``n_steps × m`` gradients). Both tuples must be exact palindromes (checked
    when the class is created): that is what makes the step reversible through
    the momentum flip; kicks and drifts are shears, so it preserves volume.
    See ``docs/tutorials/custom-map.md``.
    """

    kicks: tuple[float, ...]
    drifts: tuple[float, ...]

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        kicks, drifts = getattr(cls, "kicks", None), getattr(cls, "drifts", None)
        if kicks is None and drifts is None:
            return
        kicks, drifts = tuple(kicks or ()), tuple(drifts or ())
        if len(drifts) < 1 or len(kicks) != len(drifts) + 1:
            raise TypeError(
                f"{cls.__qualname__}: need m >= 1 drifts and m + 1 kicks, "
                f"got {len(drifts)} drifts and {len(kicks)} kicks"
            )
        if kicks != kicks[::-1] or drifts != drifts[::-1]:
            raise TypeError(
                f"{cls.__qualname__}: kicks {kicks} and drifts {drifts} must be exact "
                "palindromes, or the step is not reversible through the momentum flip"
            )

    @property
    def cost(self) -> int:  # type: ignore[override]
        """Gradient evaluations per application: ``n_steps × stages``."""
        return super().cost * len(self.drifts)

    def integrate(self, x: np.ndarray, v: np.ndarray, grad: np.ndarray) -> PhaseState:
        """``n_steps`` splitting steps from ``(x, v)`` (the :meth:`Leapfrog.integrate` hook)."""
        return _splitting(self, self.kicks, self.drifts, x, v, grad)

    def describe(self) -> dict:
        return {**super().describe(), "map": type(self).__name__}


_Splitting = SymmetricSplitting  # the former private name

_CBRT2 = 2.0 ** (1.0 / 3.0)
_W1 = 1.0 / (2.0 - _CBRT2)
_W0 = -_CBRT2 * _W1


@attrs.frozen(eq=False)
class Yoshida4(SymmetricSplitting):
    """``n_steps`` steps of Yoshida's fourth-order composition of leapfrog (3 gradients each).

    One step is three leapfrog steps of sizes ``w₁ε, w₀ε, w₁ε``,
    ``w₁ = 1/(2 − 2^{1/3}) ≈ 1.3512``, ``w₀ = −2^{1/3}w₁ ≈ −1.7024`` (Yoshida 1990,
    eq. 5.19; Hairer, Lubich & Wanner 2006, section II.4). Symplectic, reversible
    through the momentum flip, energy error ``O(ε⁴)``. Its linear stability
    interval is narrower than leapfrog's (``εω < 1.57`` against ``2``).

    Parameters
    ----------
    target, step_size, n_steps, metric
        As :class:`~ladder_mcmc.hamiltonian.leapfrog.Leapfrog`; ``step_size`` is the size of a
        whole Yoshida step.

    References
    ----------
    H. Yoshida (1990), Construction of higher order symplectic integrators,
    Physics Letters A 150, 262-268.

    Examples
    --------
    >>> import numpy as np
    >>> from ladder_mcmc import LookAhead, MomentumRefresh, sample
    >>> from ladder_mcmc.models import IllConditionedGaussian
    >>> target = IllConditionedGaussian(2, log_condition=2)
    >>> yoshida = Yoshida4(target, step_size=0.5, n_steps=4)
    >>> yoshida.cost
    12
    >>> kernel = LookAhead(yoshida, max_rungs=2, refresh=MomentumRefresh(0.5))
    >>> trace = sample(kernel, target.sample(8, np.random.default_rng(0)), 20, seed=1)
    >>> trace.positions.shape
    (20, 8, 2)
    """

    kicks = (_W1 / 2, (_W1 + _W0) / 2, (_W0 + _W1) / 2, _W1 / 2)
    drifts = (_W1, _W0, _W1)


MCLACHLAN_LAMBDA = 0.1932
"""``λ`` of the two-stage splitting (McLachlan 1995; Blanes, Casas & Sanz-Serna 2014)."""


@attrs.frozen(eq=False)
class McLachlan2(SymmetricSplitting):
    """``n_steps`` steps of the two-stage splitting ``kick λ, drift ½, kick 1−2λ, drift ½, kick λ``.

    Second order like leapfrog but with a smaller error constant for
    ``λ = 0.1932``; 2 gradients per step (so compare it with leapfrog at twice
    the step size). Symplectic and reversible through the momentum flip.

    Parameters
    ----------
    target, step_size, n_steps, metric
        As :class:`~ladder_mcmc.hamiltonian.leapfrog.Leapfrog`.

    References
    ----------
    R. I. McLachlan (1995), On the numerical integration of ordinary differential
    equations by symmetric composition methods, SIAM J. Sci. Comput. 16, 151-168.
    S. Blanes, F. Casas, J. M. Sanz-Serna (2014), Numerical integrators for the
    hybrid Monte Carlo method, SIAM J. Sci. Comput. 36, A1556-A1580.

    Examples
    --------
    >>> from ladder_mcmc.models import IllConditionedGaussian
    >>> McLachlan2(IllConditionedGaussian(2), step_size=1.0, n_steps=5).cost
    10
    """

    kicks = (MCLACHLAN_LAMBDA, 1.0 - 2.0 * MCLACHLAN_LAMBDA, MCLACHLAN_LAMBDA)
    drifts = (0.5, 0.5)
