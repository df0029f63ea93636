"""``python -m ladder_mcmc``: the ``ladder-mcmc`` command line (:mod:`ladder_mcmc.paper.cli`)."""

import sys

from ladder_mcmc.paper.cli import main

if __name__ == "__main__":
    sys.exit(main())
