"""PyTorch models: a log density of one point, batched over the chains by ``torch.func``.

:func:`from_torch` takes ``log_density(x) -> scalar`` for one point ``x`` (a 1-d float64
tensor) and batches ``-log_density`` with ``torch.func.vmap``, differentiated by
``torch.autograd.grad``: one batched call of the function per call of the ladder, in
float64 whatever torch's default dtype (the points are float64 tensors; the default
dtype is neither read nor changed). Needs
``pip install 'ladder_mcmc[torch]'``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ladder_mcmc.models.adapters.compiled import CompiledTarget, import_optional, one_function
from ladder_mcmc.models.parameters import as_parameter_space
from ladder_mcmc.validation import positive_int

_FLOAT = np.dtype(float)


def from_torch(
    log_density: Callable | None = None,
    dim: int | None = None,
    *,
    energy: Callable | None = None,
    parameters: Any = None,
) -> CompiledTarget:
    """A target from a PyTorch function of one point.

    The function is batched by ``torch.func.vmap`` and differentiated in ``x`` by
    ``torch.autograd.grad`` (the rows are independent, so the gradient of their sum is
    each row's own), so it must be written for one point, with no ``.item()``, no
    Python ``if`` on a tensor's value and no in-place change of ``x``. Tensors it closes
    over (data, weights) should be float64 — ``torch.from_numpy`` of a float64 array
    is; ``torch.tensor(data)`` is float32 unless given ``dtype``. Weights that require a
    gradient (an ``nn.Module``'s parameters) are fine: only ``x`` is differentiated, so
    they get no ``.grad``, and no graph outlives a call.

    Torch's intra-op threads (``torch.get_num_threads()``) are torch's global setting,
    and are left alone. Small models gain nothing from them, and on busy cores they can
    cost much more than they give: if so, or if chains run in several processes, try
    ``torch.set_num_threads(1)``.

    Parameters
    ----------
    log_density : callable
        ``x (dim,) -> log p(x)`` up to a constant, a scalar tensor; written with torch
        operations on the float64 tensor ``x``.
    dim : int
        Length of ``x``.
    energy : callable, keyword-only
        Instead of ``log_density``: ``x (dim,) -> E(x) = -log p(x)``. Exactly one of
        the two.
    parameters : ParameterSpace or sequence of str, optional
        Names (and shapes, and a constraining transform) for ``summary`` and
        ``to_inference_data``.

    Returns
    -------
    CompiledTarget
        ``energy_and_grad(x)`` for positions (chains, dim), in float64 (a function
        that computes in lower precision has its energies converted).

    Raises
    ------
    ValueError
        Neither or both of ``log_density`` and ``energy``; ``dim`` not a positive int;
        a function that raises, or does not return one floating-point scalar tensor,
        for a point of zeros of shape (dim,), or that ``torch.func`` cannot
        differentiate and batch (checked by calling it once each way, before any
        sampling).
    ImportError
        torch is not installed.

    Examples
    --------
    >>> import numpy as np, torch
    >>> t = from_torch(lambda x: -0.5 * torch.sum(x**2), dim=3, parameters=["a", "b", "c"])
    >>> e, g = t.energy_and_grad(np.ones((2, 3)))
    >>> e, g[0]
    (array([1.5, 1.5]), array([1., 1., 1.]))
    """
    fn, sign = one_function(log_density, energy, "from_torch")
    dim = positive_int("dim", dim)
    space = as_parameter_space(parameters, dim)
    torch = import_optional("torch", "torch")
    from torch.func import vmap

    def negated(x):
        return -fn(x)

    potential = fn if sign > 0 else negated
    batched = vmap(potential)
    autograd_grad = torch.autograd.grad
    no_grad = torch.no_grad
    from_numpy = torch.from_numpy

    zeros = torch.zeros(dim, dtype=torch.float64)
    try:
        with no_grad():
            out = fn(zeros)
    except Exception as err:  # noqa: BLE001 - any error here is the user's function
        raise ValueError(
            f"the function raised on a point of zeros of shape ({dim},): "
            f"{type(err).__name__}: {err}"
        ) from err
    if not (isinstance(out, torch.Tensor) and out.shape == () and out.is_floating_point()):
        got = (
            f"a tensor of shape {tuple(out.shape)} and dtype {out.dtype}"
            if isinstance(out, torch.Tensor)
            else repr(out)
        )
        raise ValueError(
            "the function must return one floating-point scalar tensor for a point of shape "
            f"({dim},); it returned {got}"
        )

    def evaluate(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if not x.flags.writeable or min(x.strides) < 0:
            x = x.copy()  # torch.from_numpy refuses negative strides, warns on read-only
        points = from_numpy(x).requires_grad_(True)
        e = batched(points)
        # the rows are independent (vmap), so the gradient of their sum is each row's own
        if e.requires_grad:
            (g,) = autograd_grad(e.sum(), points, allow_unused=True)
        else:  # an energy that does not depend on x
            g = None
        g = torch.zeros_like(points) if g is None else g
        e = e.detach().numpy()
        return (e if e.dtype == _FLOAT else e.astype(float)), g.numpy()

    try:
        evaluate(np.zeros((1, dim)))
    except Exception as err:  # noqa: BLE001 - torch.func refused the user's function
        raise ValueError(
            f"torch.func could not differentiate and batch the function on points of shape "
            f"({dim},) (no .item(), no Python if on a tensor's value, no in-place change "
            f"of x): {type(err).__name__}: {err}"
        ) from err
    return CompiledTarget(dim, evaluate, space, "torch")
