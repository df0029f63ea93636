"""Models from other libraries as targets: differentiate once, evaluate a batch per call.

Each adapter is an optional extra: :func:`from_jax` (``jax``), :func:`from_pymc`
(``pymc``), :func:`from_torch` (``torch``). Each compiles the model's energy and its
gradient for a batch of chains and returns a
:class:`~ladder_mcmc.models.adapters.compiled.CompiledTarget`.
"""

from ladder_mcmc.models.adapters.compiled import CompiledTarget
from ladder_mcmc.models.adapters.jax_models import from_jax
from ladder_mcmc.models.adapters.pymc_models import from_pymc
from ladder_mcmc.models.adapters.torch_models import from_torch

__all__ = ["CompiledTarget", "from_jax", "from_pymc", "from_torch"]
