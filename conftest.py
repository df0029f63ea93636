"""pytest at the repository's root: what the doctest collection of the package skips.

``python -m pytest`` collects the package's doctests (``--doctest-modules``). The
compiled bookkeeping of the fast driver imports numba, an optional extra (``fast``):
without it, that module is not collected (its tests skip themselves). The example of
the posteriors' JAX log densities runs JAX, another optional extra (``jax``): without
it, that module's doctest is not collected either.
"""

import importlib.util

collect_ignore = []
if not importlib.util.find_spec("numba"):
    collect_ignore.append("ladder_mcmc/drivers/_leapfrog_numba.py")
if not importlib.util.find_spec("jax"):
    collect_ignore.append("ladder_mcmc/models/posteriors/jax_log_density.py")
