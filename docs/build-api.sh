#!/usr/bin/env bash
# Build the API reference from the docstrings into the folder given (default docs/api).
# Needs pdoc (pinned in .ci/run) and the test extra (ladder_mcmc.verify uses hypothesis).
# Every warning (an unresolvable annotation, a broken docstring) is an error.
set -euo pipefail
cd "$(dirname "$0")/.."
python -W error -m pdoc --docformat numpy -o "${1:-docs/api}" \
  ladder_mcmc ladder_mcmc.ladder ladder_mcmc.hamiltonian ladder_mcmc.drivers \
  ladder_mcmc.run ladder_mcmc.diagnostics ladder_mcmc.verify ladder_mcmc.models \
  ladder_mcmc.models.posteriors ladder_mcmc.paper
