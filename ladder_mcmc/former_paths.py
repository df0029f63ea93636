"""Where every module came from: the flat layout's paths keep working.

Until the package moved into its subpackages (issue 14) its modules stood side by
side: ``ladder_mcmc.targets``, ``ladder_mcmc.hmc``, ``ladder_mcmc.sampling``, ...
:data:`FORMER` says, for every module of the house, the module it came from, and
:data:`FORMER_NAMES` the few names that left their module for another. From them:

* **imports** — each former path is resolved, lazily (on its first import, so that
  ``import ladder_mcmc`` imports nothing more than before), by the finder
  :class:`FormerPaths`: a module that moved whole *is* its new module (the same
  object in ``sys.modules``, so ``monkeypatch.setattr`` and ``isinstance`` see one
  module and one class; submodules follow: ``ladder_mcmc.posteriors.references`` is
  ``ladder_mcmc.models.posteriors.references``); a module whose contents went to
  several modules is a namespace that reads each name from them, in order
  (:func:`former_homes`). ``ladder_mcmc.ladder`` and ``ladder_mcmc.diagnostics`` are
  now the subpackages of those names, which re-export what the modules held.
* **checkpoints** — a checkpoint names its state classes by module
  (``ladder_mcmc.hmc:PhaseState`` before the move): those resolve as imports do. A
  kernel's fingerprint hashes the module of every class in it by its *former* path
  (:func:`former_module`), so the fingerprints, and the checkpoints written before
  the move, stay valid.

The leapfrog fast path of the ragged schedule was ``ladder_mcmc.ragged_leapfrog``,
whose switch ``COMPILED`` users set; it is now the private
``ladder_mcmc.drivers._leapfrog`` and the switch :data:`ladder_mcmc.drivers.COMPILED`.
Its former path stays (:class:`_FormerFastPath`): ``COMPILED`` there reads and sets
the new switch.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types

FORMER = {
    # the abstract ladder
    "ladder_mcmc.ladder.batch": "ladder_mcmc.batch",
    "ladder_mcmc.ladder.cycle": "ladder_mcmc.cycle",
    "ladder_mcmc.ladder.kernel": "ladder_mcmc.ladder",
    "ladder_mcmc.ladder.maps": "ladder_mcmc.maps",
    "ladder_mcmc.ladder.persistent_uniform": "ladder_mcmc.persistent_uniform",
    "ladder_mcmc.ladder.reduced_flip": "ladder_mcmc.reduced_flip",
    "ladder_mcmc.ladder.refresh": "ladder_mcmc.refresh",
    "ladder_mcmc.ladder.rules": "ladder_mcmc.rules",
    # HMC
    "ladder_mcmc.hamiltonian.harmonic": "ladder_mcmc.harmonic",
    "ladder_mcmc.hamiltonian.integrators": "ladder_mcmc.integrators",
    "ladder_mcmc.hamiltonian.jitter": "ladder_mcmc.jitter",
    "ladder_mcmc.hamiltonian.kinetic": "ladder_mcmc.kinetic",
    "ladder_mcmc.hamiltonian.leapfrog": "ladder_mcmc.hmc",
    "ladder_mcmc.hamiltonian.lifted": "ladder_mcmc.lifted_refresh",
    "ladder_mcmc.hamiltonian.metrics": "ladder_mcmc.metrics",
    "ladder_mcmc.hamiltonian.samplers": "ladder_mcmc.hmc",
    "ladder_mcmc.hamiltonian.tempered": "ladder_mcmc.tempered",
    # drivers
    "ladder_mcmc.drivers._iteration_buffer": "ladder_mcmc.iteration_buffer",
    "ladder_mcmc.drivers._leapfrog": "ladder_mcmc.ragged_leapfrog",
    "ladder_mcmc.drivers._leapfrog_numba": "ladder_mcmc.ragged_numba",
    "ladder_mcmc.drivers.ragged": "ladder_mcmc.ragged",
    "ladder_mcmc.drivers.streams": "ladder_mcmc.streams",
    "ladder_mcmc.drivers.synchronous": "ladder_mcmc.sampling",
    # running chains
    "ladder_mcmc.run.adaptation": "ladder_mcmc.adaptation",
    "ladder_mcmc.run.checkpoint": "ladder_mcmc.checkpoint",
    "ladder_mcmc.run.draws_files": "ladder_mcmc.trace",
    "ladder_mcmc.run.parallel": "ladder_mcmc.parallel",
    "ladder_mcmc.run.progress": "ladder_mcmc.progress",
    "ladder_mcmc.run.recorder": "ladder_mcmc.trace",
    "ladder_mcmc.run.resume": "ladder_mcmc.sampling",
    "ladder_mcmc.run.sample": "ladder_mcmc.sampling",
    "ladder_mcmc.run.trace": "ladder_mcmc.trace",
    # diagnostics
    "ladder_mcmc.diagnostics.autocorrelation": "ladder_mcmc.diagnostics",
    "ladder_mcmc.diagnostics.checks": "ladder_mcmc.checks",
    "ladder_mcmc.diagnostics.ess": "ladder_mcmc.diagnostics",
    "ladder_mcmc.diagnostics.gradient": "ladder_mcmc.checks",
    "ladder_mcmc.diagnostics.rung_table": "ladder_mcmc.diagnostics",
    "ladder_mcmc.diagnostics.summary": "ladder_mcmc.summary",
    # verification (``ladder_mcmc.testing`` reads first from the subpackage, which
    # re-exports every check)
    "ladder_mcmc.verify": "ladder_mcmc.testing",
    "ladder_mcmc.verify.exact": "ladder_mcmc.testing",
    "ladder_mcmc.verify.finite": "ladder_mcmc.finite",
    "ladder_mcmc.verify.invariance": "ladder_mcmc.testing",
    "ladder_mcmc.verify.map_contract": "ladder_mcmc.testing",
    "ladder_mcmc.verify.strategies": "ladder_mcmc.testing",
    "ladder_mcmc.verify.transitions": "ladder_mcmc.finite",
    # models (with the submodules of posteriors) and the paper (with its modules)
    "ladder_mcmc.models.targets": "ladder_mcmc.targets",
    "ladder_mcmc.models.posteriors": "ladder_mcmc.posteriors",
    "ladder_mcmc.paper": "ladder_mcmc.reproduction",
    "ladder_mcmc.paper.cli": "ladder_mcmc.cli",
}
"""Module of the house -> the module it came from. The subpackages
``ladder_mcmc.models.posteriors`` (formerly ``ladder_mcmc.posteriors``) and
``ladder_mcmc.paper`` (formerly ``ladder_mcmc.reproduction``) moved with their
modules, which kept their names."""

FORMER_NAMES = {
    "ladder_mcmc.hamiltonian.momentum:MomentumRefresh": "ladder_mcmc.refresh",
    "ladder_mcmc.hamiltonian.momentum:NO_REFRESH": "ladder_mcmc.refresh",
    "ladder_mcmc.hamiltonian.momentum:as_beta": "ladder_mcmc.refresh",
    "ladder_mcmc.hamiltonian.momentum:NormalizedMomentumRefresh": "ladder_mcmc.kinetic",
    "ladder_mcmc.hamiltonian.samplers:lifted_lahmc": "ladder_mcmc.lifted_refresh",
    "ladder_mcmc.ladder.rules:base_for": "ladder_mcmc.ladder",
    "ladder_mcmc.ladder.rules:check_rule": "ladder_mcmc.ladder",
    "ladder_mcmc.models.targets:energy_and_grad": "ladder_mcmc.hmc",
}
"""``module:name`` -> the module the name came from, where that is not the module's
:data:`FORMER` (``energy_and_grad`` was ``ladder_mcmc.hmc._energy_and_grad``)."""

ALSO_EXPORTED = {
    "ladder_mcmc.rules": (
        "ladder_mcmc.ladder.reduced_flip",
        "ladder_mcmc.ladder.persistent_uniform",
    ),
}
"""Former module -> modules whose names it re-exported besides its own (``from
ladder_mcmc.rules import ReducedFlipRule`` worked)."""

_PACKAGES_MOVED_WHOLE = ("ladder_mcmc.models.posteriors", "ladder_mcmc.paper")
_KEPT_THEIR_NAME = ("ladder_mcmc.ladder", "ladder_mcmc.diagnostics")
FAST_PATH_MODULE = "ladder_mcmc.ragged_leapfrog"
"""The fast path's former module (:class:`_FormerFastPath`)."""


def former_module(module: str, qualname: str) -> str:
    """The module that held ``module``'s class or function ``qualname`` before the move
    (``module`` itself for one that did not move, or is not the package's)."""
    name = FORMER_NAMES.get(f"{module}:{qualname}")
    if name is not None:
        return name
    if module in FORMER:
        return FORMER[module]
    for package in _PACKAGES_MOVED_WHOLE:
        if module.startswith(package + "."):
            return FORMER[package] + module[len(package) :]
    return module


def former_homes(name: str) -> tuple[str, ...]:
    """The modules the former module ``name`` went to, in order (empty for a module that
    is not a former one, or kept its name)."""
    if name in _KEPT_THEIR_NAME:
        return ()
    homes = [new for new, old in FORMER.items() if old == name]
    homes += [key.partition(":")[0] for key, old in FORMER_NAMES.items() if old == name]
    homes += ALSO_EXPORTED.get(name, ())
    for package in _PACKAGES_MOVED_WHOLE:
        if name.startswith(FORMER[package] + "."):
            homes.append(package + name[len(FORMER[package]) :])
    return tuple(dict.fromkeys(homes))


def _namespace(name: str, parts: tuple[str, ...]) -> types.ModuleType:
    """A module ``name`` whose attributes are read from the modules ``parts``, in order."""
    modules = [importlib.import_module(part) for part in parts]
    namespace = types.ModuleType(name, f"Former module {name}: now {', '.join(parts)}.")
    public = []
    for module in modules:
        names = getattr(module, "__all__", None)
        if names is None:
            names = [n for n in vars(module) if not n.startswith("_")]
        public += [n for n in names if n not in public]
    namespace.__all__ = public

    def __getattr__(attr: str):  # noqa: N807 - a module __getattr__ (PEP 562)
        for module in modules:
            if hasattr(module, attr):
                return getattr(module, attr)
        raise AttributeError(f"module {name!r} (now {', '.join(parts)}) has no attribute {attr!r}")

    def __dir__():  # noqa: N807 - a module __dir__ (PEP 562)
        return sorted(set(public))

    namespace.__getattr__ = __getattr__
    namespace.__dir__ = __dir__
    return namespace


class _FormerFastPath(types.ModuleType):
    """``ladder_mcmc.ragged_leapfrog``: ``COMPILED`` is :data:`ladder_mcmc.drivers.COMPILED`
    (read and set); every other name is read from ``ladder_mcmc.drivers._leapfrog``."""

    @property
    def COMPILED(self) -> bool | None:  # noqa: N802 - the former module's switch
        from ladder_mcmc import drivers

        return drivers.COMPILED

    @COMPILED.setter
    def COMPILED(self, value: bool | None) -> None:  # noqa: N802
        from ladder_mcmc import drivers

        drivers.COMPILED = value


class _Loader(importlib.abc.Loader):
    """Loads a former module: its one new home itself, or a namespace of several."""

    def __init__(self, homes: tuple[str, ...]) -> None:
        self.homes = homes
        self.spec = None

    def create_module(self, spec):
        if spec.name == FAST_PATH_MODULE:
            module = _namespace(spec.name, self.homes)
            module.__class__ = _FormerFastPath
            return module
        if len(self.homes) > 1:
            return _namespace(spec.name, self.homes)
        module = importlib.import_module(self.homes[0])
        self.spec = module.__spec__  # the import system overwrites it; exec_module restores it
        return module

    def exec_module(self, module) -> None:
        if self.spec is not None:
            module.__spec__ = self.spec


class FormerPaths(importlib.abc.MetaPathFinder):
    """Finds the former modules (:func:`former_homes`) and loads their new homes."""

    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith("ladder_mcmc."):
            return None
        homes = former_homes(fullname)
        if not homes:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Loader(homes))


SHADOWED = ("ladder_mcmc.hmc",)
"""Former modules whose name the package now gives to a function (``ladder_mcmc.hmc``):
registered by :func:`install`, so that importing one (a checkpoint naming
``ladder_mcmc.hmc:PhaseState``) never rebinds the package's attribute to the module."""


def install() -> None:
    """Put :class:`FormerPaths` first on ``sys.meta_path`` (once), and register the
    :data:`SHADOWED` former modules (their new homes are imported by then)."""
    if not any(isinstance(finder, FormerPaths) for finder in sys.meta_path):
        sys.meta_path.insert(0, FormerPaths())
    for name in SHADOWED:
        if name not in sys.modules:
            sys.modules[name] = _namespace(name, former_homes(name))


def former_attribute(name: str):
    """``ladder_mcmc.<name>`` for a former module ``name`` (imported on first access), else
    ``AttributeError``."""
    if not former_homes(f"ladder_mcmc.{name}"):
        raise AttributeError(f"module 'ladder_mcmc' has no attribute {name!r}")
    return importlib.import_module(f"ladder_mcmc.{name}")
