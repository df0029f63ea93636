"""The modules' former paths: imports written for the flat layout keep working.

Until the package moved into its subpackages (issue 14) its modules stood side by
side: ``ladder_mcmc.targets``, ``ladder_mcmc.hmc``, ``ladder_mcmc.sampling``, ...
Each former path is resolved here, lazily (on its first import, so that
``import ladder_mcmc`` imports nothing more than before), to its new home:

* :data:`MOVED` — a module that moved whole: the former path *is* the new module
  (the same object in ``sys.modules``, so that ``monkeypatch.setattr`` and
  ``isinstance`` see one module and one class); submodules follow
  (``ladder_mcmc.posteriors.references`` is ``ladder_mcmc.models.posteriors.references``);
* :data:`SPLIT` — a module whose contents went to several new modules: the former
  path is a namespace module that reads every name from them, in order.

A checkpoint written before the move names its state classes by their former
modules (``ladder_mcmc.hmc:PhaseState``); they resolve here as well.

The leapfrog fast path of the ragged schedule was the module
``ladder_mcmc.ragged_leapfrog``, whose switch ``COMPILED`` users set; it is now the
private ``ladder_mcmc.drivers._leapfrog``, and the switch
:data:`ladder_mcmc.drivers.COMPILED`. The former path stays (:class:`_FormerFastPath`):
its ``COMPILED`` reads and sets the new switch. ``ragged_numba`` and
``iteration_buffer`` were never used from outside and have no former path.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types

MOVED = {
    "ladder_mcmc.adaptation": "ladder_mcmc.run.adaptation",
    "ladder_mcmc.batch": "ladder_mcmc.ladder.batch",
    "ladder_mcmc.checkpoint": "ladder_mcmc.run.checkpoint",
    "ladder_mcmc.cli": "ladder_mcmc.paper.cli",
    "ladder_mcmc.cycle": "ladder_mcmc.ladder.cycle",
    "ladder_mcmc.harmonic": "ladder_mcmc.hamiltonian.harmonic",
    "ladder_mcmc.integrators": "ladder_mcmc.hamiltonian.integrators",
    "ladder_mcmc.jitter": "ladder_mcmc.hamiltonian.jitter",
    "ladder_mcmc.maps": "ladder_mcmc.ladder.maps",
    "ladder_mcmc.metrics": "ladder_mcmc.hamiltonian.metrics",
    "ladder_mcmc.parallel": "ladder_mcmc.run.parallel",
    "ladder_mcmc.persistent_uniform": "ladder_mcmc.ladder.persistent_uniform",
    "ladder_mcmc.posteriors": "ladder_mcmc.models.posteriors",
    "ladder_mcmc.progress": "ladder_mcmc.run.progress",
    "ladder_mcmc.ragged": "ladder_mcmc.drivers.ragged",
    "ladder_mcmc.reduced_flip": "ladder_mcmc.ladder.reduced_flip",
    "ladder_mcmc.reproduction": "ladder_mcmc.paper",
    "ladder_mcmc.streams": "ladder_mcmc.drivers.streams",
    "ladder_mcmc.summary": "ladder_mcmc.diagnostics.summary",
    "ladder_mcmc.targets": "ladder_mcmc.models.targets",
    "ladder_mcmc.tempered": "ladder_mcmc.hamiltonian.tempered",
    "ladder_mcmc.testing": "ladder_mcmc.verify",
}
"""Former module -> the module it now is (``ladder_mcmc.ladder`` and
``ladder_mcmc.diagnostics`` kept their names: they are now the subpackages, which
re-export what the former modules held)."""

SPLIT = {
    "ladder_mcmc.checks": ("ladder_mcmc.diagnostics.checks", "ladder_mcmc.diagnostics.gradient"),
    "ladder_mcmc.finite": ("ladder_mcmc.verify.finite", "ladder_mcmc.verify.transitions"),
    "ladder_mcmc.hmc": (
        "ladder_mcmc.hamiltonian.leapfrog",
        "ladder_mcmc.hamiltonian.samplers",
    ),
    "ladder_mcmc.kinetic": ("ladder_mcmc.hamiltonian.kinetic", "ladder_mcmc.hamiltonian.momentum"),
    "ladder_mcmc.lifted_refresh": (
        "ladder_mcmc.hamiltonian.lifted",
        "ladder_mcmc.hamiltonian.samplers",
    ),
    "ladder_mcmc.refresh": ("ladder_mcmc.ladder.refresh", "ladder_mcmc.hamiltonian.momentum"),
    "ladder_mcmc.rules": (
        "ladder_mcmc.ladder.rules",
        "ladder_mcmc.ladder.reduced_flip",
        "ladder_mcmc.ladder.persistent_uniform",
    ),
    "ladder_mcmc.sampling": (
        "ladder_mcmc.run.sample",
        "ladder_mcmc.run.resume",
        "ladder_mcmc.drivers.synchronous",
    ),
    "ladder_mcmc.trace": (
        "ladder_mcmc.run.trace",
        "ladder_mcmc.run.recorder",
        "ladder_mcmc.run.draws_files",
    ),
}
"""Former module -> the modules its names went to, searched in order."""


FAST_PATH_MODULE = "ladder_mcmc.ragged_leapfrog"
"""The fast path's former module (:class:`_FormerFastPath`)."""


def new_home(name: str) -> str | tuple[str, ...] | None:
    """The new module(s) of the former module ``name``, or None if it is not a former one."""
    if name == FAST_PATH_MODULE:
        return ("ladder_mcmc.drivers._leapfrog",)
    if name in SPLIT:
        return SPLIT[name]
    for old, new in MOVED.items():
        if name == old or name.startswith(old + "."):
            return new + name[len(old) :]
    return None


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
    def __init__(self, home: str | tuple[str, ...]) -> None:
        self.home = home

    def create_module(self, spec):
        if spec.name == FAST_PATH_MODULE:
            module = _namespace(spec.name, self.home)
            module.__class__ = _FormerFastPath
            return module
        if isinstance(self.home, tuple):
            return _namespace(spec.name, self.home)
        module = importlib.import_module(self.home)
        self.spec = module.__spec__  # the import system overwrites it; exec_module restores it
        return module

    def exec_module(self, module) -> None:
        if not isinstance(self.home, tuple):
            module.__spec__ = self.spec


class FormerPaths(importlib.abc.MetaPathFinder):
    """Finds the former modules (:func:`new_home`) and loads their new homes."""

    def find_spec(self, fullname, path=None, target=None):
        home = new_home(fullname)
        if home is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Loader(home))


def install() -> None:
    """Put :class:`FormerPaths` first on ``sys.meta_path`` (once)."""
    if not any(isinstance(finder, FormerPaths) for finder in sys.meta_path):
        sys.meta_path.insert(0, FormerPaths())


def former_attribute(name: str):
    """``ladder_mcmc.<name>`` for a former module ``name`` (imported on first access), else
    ``AttributeError``."""
    if new_home(f"ladder_mcmc.{name}") is None:
        raise AttributeError(f"module 'ladder_mcmc' has no attribute {name!r}")
    return importlib.import_module(f"ladder_mcmc.{name}")
