"""pytest at the repository's root: what the doctest collection of the package skips.

``python -m pytest`` collects the package's doctests (``--doctest-modules``). The
compiled bookkeeping of the fast driver imports numba, an optional extra (``fast``):
without it, that module is not collected (its tests skip themselves).
"""

import importlib.util

collect_ignore = (
    [] if importlib.util.find_spec("numba") else ["ladder_mcmc/drivers/_leapfrog_numba.py"]
)
