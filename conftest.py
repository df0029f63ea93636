"""pytest at the repository's root: what the doctest collection of the package skips.

``python -m pytest`` collects the package's doctests (``--doctest-modules``). The
examples of the JAX adapter and of the posteriors' JAX log densities run JAX, an
optional extra (``jax``): without it, those modules' doctests are not collected; nor,
without PyMC (extra ``pymc``), the PyMC adapter's; and without PyTorch (extra
``torch``), the PyTorch adapter's.
"""

import importlib.util

collect_ignore = []
if not importlib.util.find_spec("jax"):
    collect_ignore += [
        "ladder_mcmc/models/posteriors/jax_densities.py",
        "ladder_mcmc/models/adapters/jax_models.py",
        "ladder_mcmc/bench/jax_densities.py",
    ]
if not importlib.util.find_spec("pymc") or not importlib.util.find_spec("jax"):
    collect_ignore.append("ladder_mcmc/models/adapters/pymc_models.py")
if not importlib.util.find_spec("torch"):
    collect_ignore.append("ladder_mcmc/models/adapters/torch_models.py")
