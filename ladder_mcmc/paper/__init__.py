"""Reproduction of the paper's experiments (section 5): table 1, figures 2 and 3.

One module per result — :mod:`~ladder_mcmc.reproduction.table1`,
:mod:`~ladder_mcmc.reproduction.figure2`, :mod:`~ladder_mcmc.reproduction.figure3` —
built on the shared settings of :mod:`~ladder_mcmc.reproduction.settings`; the
plots (matplotlib, the optional ``plots`` extra) are in
:mod:`~ladder_mcmc.reproduction.plotting`. The command line
(``ladder-mcmc``, :mod:`ladder_mcmc.cli`) runs them.
"""
