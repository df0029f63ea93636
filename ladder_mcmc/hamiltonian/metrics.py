"""Mass matrices (metrics) for Hamiltonian dynamics.

The kinetic energy is ``K(v) = ½ vᵀ M⁻¹ v`` and the momentum is drawn from
``N(0, M)``; the paper uses ``M = I`` (section 3.1, eq. for ``p(v)``). A metric
is described by its *inverse* mass matrix ``M⁻¹``, which plays the role of a
covariance estimate of the target (Stan's convention).
"""

from __future__ import annotations

import attrs
import numpy as np

from ladder_mcmc.arrays import fold_columns, is_traced, namespace


def _row_dot_einsum(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.einsum("ij,ij->i", a, b)


#: ``row_dot(a, b)[i] = Σ_j a[i, j] b[i, j]`` for real (chains, dim) numpy arrays: the
#: ``vecdot`` ufunc where numpy has it (numpy ≥ 2), ``einsum`` before. Every Gaussian
#: kinetic energy of the package goes through it (one rounding for every caller).
_numpy_row_dot = getattr(np, "vecdot", _row_dot_einsum)


def row_dot(a, b):
    """``Σ_j a[i, j] b[i, j]`` per row (numpy's ``vecdot``; on JAX values the products'
    columns folded first, :func:`~ladder_mcmc.arrays.fold_columns`, so that a compiled
    loop sums each row in one operation)."""
    if type(a) is np.ndarray and type(b) is np.ndarray:
        return _numpy_row_dot(a, b)
    xp = namespace(a, b)
    return fold_columns(xp, a * b).sum(axis=1)


def _as_inverse_mass(value: object) -> np.ndarray | None:
    if value is None or is_traced(value):  # computed inside a compiled warm-up: as it is
        return value
    arr = np.asarray(value, dtype=float)
    if arr.ndim not in (1, 2) or (arr.ndim == 2 and arr.shape[0] != arr.shape[1]):
        raise ValueError(
            f"inverse_mass must be a vector (diagonal) or a square matrix, got shape {arr.shape}"
        )
    if not np.all(np.isfinite(arr)):
        raise ValueError("inverse_mass must be finite")
    if arr.ndim == 1 and np.any(arr <= 0):
        raise ValueError(f"inverse_mass must be positive, got {arr!r}")
    if arr.ndim == 2:
        return _symmetric_positive_definite(arr)
    return arr


#: Relative asymmetry ``max|M⁻¹ − M⁻ᵀ| / max|M⁻¹|`` accepted as rounding (and removed).
SYMMETRY_RTOL = 1e-10


def _symmetric_positive_definite(m: np.ndarray) -> np.ndarray:
    """``(m + mᵀ)/2``, or ``ValueError`` unless ``m`` is symmetric up to rounding and
    positive definite (naming the largest asymmetry or the smallest eigenvalue)."""
    asymmetry = float(np.max(np.abs(m - m.T), initial=0.0))
    scale = float(np.max(np.abs(m), initial=0.0))
    if asymmetry > SYMMETRY_RTOL * scale:
        i, j = np.unravel_index(np.argmax(np.abs(m - m.T)), m.shape)
        raise ValueError(
            f"inverse_mass must be symmetric: |M[{i}, {j}] - M[{j}, {i}]| = {asymmetry:.6g} "
            f"(largest entry {scale:.6g}); a covariance estimate is symmetric"
        )
    sym = (m + m.T) / 2
    smallest = float(np.linalg.eigvalsh(sym)[0]) if sym.size else 1.0
    if not smallest > 0:
        raise ValueError(
            f"inverse_mass must be positive definite: its smallest eigenvalue is {smallest:.6g}"
        )
    return sym


def _canonical(m: np.ndarray | None) -> tuple[int | None, np.ndarray | None]:
    """``(dim, M⁻¹)`` in its simplest form: ``M⁻¹`` None for the identity (``dim`` None
    when unspecified), else a diagonal, else a dense matrix."""
    if m is None:
        return None, None
    if m.ndim == 2 and np.array_equal(m, np.diag(np.diag(m))):
        m = np.diag(m)
    return m.shape[0], (None if m.ndim == 1 and np.all(m == 1) else m)


@attrs.frozen(eq=False)
class Metric:
    """Euclidean metric with inverse mass matrix ``M⁻¹``.

    Parameters
    ----------
    inverse_mass : None, array (dim,) or array (dim, dim)
        ``None`` for the identity (the paper's choice), a vector for a
        diagonal ``M⁻¹``, a symmetric positive-definite matrix for a dense one
        (an asymmetry within rounding, ``SYMMETRY_RTOL`` relative to the largest
        entry, is removed by ``(M⁻¹ + M⁻ᵀ)/2``).

    Raises
    ------
    ValueError
        If ``inverse_mass`` is not finite, a vector with a non-positive entry, a
        matrix asymmetric beyond rounding (naming the largest asymmetry) or not
        positive definite (naming the smallest eigenvalue).
    """

    inverse_mass: np.ndarray | None = attrs.field(default=None, converter=_as_inverse_mass)
    _chol_mass: np.ndarray | None = attrs.field(init=False, default=None)
    _sqrt_mass: np.ndarray | None = attrs.field(init=False, default=None)

    def __attrs_post_init__(self) -> None:
        m = self.inverse_mass
        if is_traced(m):  # inside a compiled warm-up: the same factors, unchecked
            xp = namespace(m)
            if m.ndim == 2:
                mass = xp.linalg.inv(m)
                object.__setattr__(self, "_chol_mass", xp.linalg.cholesky((mass + mass.T) / 2))
            else:
                object.__setattr__(self, "_sqrt_mass", 1.0 / xp.sqrt(m))
        elif m is not None and m.ndim == 2:
            try:
                mass = np.linalg.inv(m)
                object.__setattr__(self, "_chol_mass", np.linalg.cholesky((mass + mass.T) / 2))
            except np.linalg.LinAlgError as err:
                smallest = float(np.linalg.eigvalsh(m)[0])
                raise ValueError(
                    "inverse_mass must be symmetric positive definite, and well enough "
                    f"conditioned to invert: its smallest eigenvalue is {smallest:.6g}"
                ) from err
        elif m is not None:
            object.__setattr__(self, "_sqrt_mass", 1.0 / np.sqrt(m))

    @property
    def dim(self) -> int | None:
        return None if self.inverse_mass is None else self.inverse_mass.shape[0]

    def velocity(self, v: np.ndarray) -> np.ndarray:
        """``dx/dt = M⁻¹ v`` for a batch ``v`` of shape (chains, dim)."""
        m = self.inverse_mass
        if m is None:
            return v
        if m.ndim == 1:
            return v * m
        # row by row (M⁻¹ is symmetric): a matrix product would round a chain's row
        # differently in batches of other sizes, and the draws must not depend on them
        return namespace(v, m).einsum("ij,kj->ik", v, m)

    def kinetic(self, v: np.ndarray) -> np.ndarray:
        """``½ vᵀ M⁻¹ v`` per chain, shape (chains,)."""
        if self.inverse_mass is None and type(v) is np.ndarray:  # the identity, on the host
            return 0.5 * _numpy_row_dot(v, v)
        return 0.5 * row_dot(v, self.velocity(v))

    def sample_momentum(self, rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
        """Draws from ``N(0, M)``, shape (chains, dim)."""
        return self.momentum_of(rng.standard_normal(shape))

    def momentum_of(self, z: np.ndarray) -> np.ndarray:
        """The momenta ``M^{1/2} z`` of standard normals ``z`` (chains, dim): ``N(0, M)``."""
        if self.inverse_mass is None:
            return z
        if self._sqrt_mass is not None:
            return z * self._sqrt_mass
        return namespace(z).einsum("ij,kj->ik", z, self._chol_mass)  # z @ L.T, row by row

    def same_law(self, other: object) -> bool:
        """Whether ``other`` is a :class:`Metric` with the same ``M⁻¹``, however written:
        the identity, a diagonal of ones and the identity matrix are one law, and so are a
        diagonal and the dense matrix with that diagonal."""
        if not isinstance(other, Metric):
            return False
        (dim_a, a), (dim_b, b) = _canonical(self.inverse_mass), _canonical(other.inverse_mass)
        if dim_a is not None and dim_b is not None and dim_a != dim_b:
            return False
        if a is None or b is None:
            return a is None and b is None
        return a.shape == b.shape and bool(np.array_equal(a, b))

    def describe(self) -> dict:
        m = self.inverse_mass
        return {"metric": "identity" if m is None else ("diagonal" if m.ndim == 1 else "dense")}
