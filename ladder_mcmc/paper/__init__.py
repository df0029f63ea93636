"""The paper reproduced: its experiments of section 5, table 1 and figures 2 and 3.

One module per result — :mod:`~ladder_mcmc.paper.table1` (the fraction of steps
taking each rung), :mod:`~ladder_mcmc.paper.figure2` (autocorrelation against
gradient evaluations), :mod:`~ladder_mcmc.paper.figure3` (the gradients LAHMC saves
over a grid of settings) — built on the shared settings of
:mod:`~ladder_mcmc.paper.settings`; the plots (matplotlib, the optional ``plots``
extra, imported when a plot is drawn) are in :mod:`~ladder_mcmc.paper.plotting`.
The command line (``ladder-mcmc``, :func:`main` in :mod:`ladder_mcmc.paper.cli`)
runs them.
"""

from ladder_mcmc.paper import figure2, figure3, plotting, settings, table1
from ladder_mcmc.paper.cli import main

__all__ = ["figure2", "figure3", "main", "plotting", "settings", "table1"]
