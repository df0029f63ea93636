#!/usr/bin/env bash
# Build the API reference from the docstrings into the folder given (default docs/api):
# every public module of ladder_mcmc (no leading underscore), one page each.
# Needs pdoc (pinned in .ci/run) and the test extra (ladder_mcmc.verify uses hypothesis).
# Every warning (an unresolvable annotation, a broken docstring) is an error.
set -euo pipefail
cd "$(dirname "$0")/.."
modules=$(python - <<'PY'
import pkgutil
import ladder_mcmc

names = ["ladder_mcmc"]
for info in pkgutil.walk_packages(ladder_mcmc.__path__, "ladder_mcmc."):
    if not any(part.startswith("_") for part in info.name.split(".")):
        names.append(info.name)
print(" ".join(names))
PY
)
# a package's page may already have pulled in a submodule named here ("module
# specification ... already been added"): that notice is not a defect, every other
# warning is
# shellcheck disable=SC2086
python -W error -W "ignore:The module specification:UserWarning" \
  -m pdoc --docformat numpy -o "${1:-docs/api}" $modules
