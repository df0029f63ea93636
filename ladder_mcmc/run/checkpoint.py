"""Checkpoints: a run's full state as data, written atomically (docs/design.md §10).

A checkpoint is one ``.npz`` file (loaded with ``allow_pickle=False``) holding

* the arrays: draws and per-step statistics so far, the kernel state (the map's
  state, directions, log densities, the rule's carry). A run that streams its
  draws to a file (``sample(..., draws_file=...)``) keeps them there: the
  checkpoint holds only the last kept row of draws (a template of their
  structure, shape and dtype, and a fingerprint checked on resume) and the
  file's path in ``meta["draws_file"]`` (absolute, and relative to the
  checkpoint's folder), so it never copies the draws (format version 2);
* ``meta``: a JSON string with the format version, the kernel's description,
  the generator's bit-generator state, the run's settings (steps, thinning,
  schedule, block) and the state's structure (attrs class and field names).

Nothing in it is code (an object array of Python floats, e.g. the carry of
``PersistentUniformRule(delta=Fraction(...))``, is stored as float64 and restored
as an object array; any other object array is refused with ``ValueError``). The
state's attrs class is named in the metadata and resolved by import, and
accepted only if it is an attrs class whose fields match the stored ones. The
kernel itself (which holds your target's code) is passed again to
:func:`~ladder_mcmc.run.resume.resume`, and refused unless its description and its
fingerprint (:func:`~ladder_mcmc.run.fingerprints.fingerprint`: its parameters and its
target's code) equal the stored ones.

Files are written to a temporary file in the same folder, flushed to disk, and
moved over the old one with :func:`os.replace`: a crash mid-write never leaves
a half-written checkpoint where a good one stood.
"""

from __future__ import annotations

import importlib
import json
import os
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from ladder_mcmc.run.fingerprints import fingerprint

FORMAT = "ladder_mcmc.checkpoint"
VERSION = 2
"""Format version written. 2: ``meta["draws_file"]`` (draws kept in a file, see above)."""
READABLE = (1, 2)
"""Format versions read (a version-1 file has its draws in the archive)."""


def _flatten(tree: Any, prefix: str, arrays: dict[str, np.ndarray]) -> Any:
    """Store the leaves of ``tree`` in ``arrays``; return its JSON structure."""
    if tree is None:
        return None
    if attrs.has(type(tree)):
        cls = type(tree)
        fields = [f.name for f in attrs.fields(cls) if f.init]
        return {
            "class": f"{cls.__module__}:{cls.__qualname__}",
            "fields": {f: _flatten(getattr(tree, f), f"{prefix}.{f}", arrays) for f in fields},
        }
    leaf = np.asarray(tree)
    if leaf.dtype == object:
        # Python floats in an object array (e.g. the carry of
        # PersistentUniformRule(delta=Fraction(...)): float + Fraction is a float):
        # stored as float64, which is exact, and restored as an object array.
        # Anything else would need a pickle, which a checkpoint never holds.
        if not all(isinstance(e, float) for e in leaf.flat):
            kinds = sorted({type(e).__name__ for e in leaf.flat if not isinstance(e, float)})
            raise ValueError(
                f"checkpoint cannot store {prefix!r}: an object array holding "
                f"{', '.join(kinds)} (only numeric arrays, or object arrays of floats)"
            )
        arrays[prefix] = leaf.astype(np.float64)
        return {"leaf": prefix, "object": True}
    arrays[prefix] = leaf
    return {"leaf": prefix}


def _unflatten(structure: Any, arrays: Any) -> Any:
    if structure is None:
        return None
    if "leaf" in structure:
        leaf = np.array(arrays[structure["leaf"]])
        return leaf.astype(object) if structure.get("object") else leaf
    module, _, qualname = structure["class"].partition(":")
    try:
        obj: Any = importlib.import_module(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as err:
        raise ValueError(f"checkpoint names an unknown state class {structure['class']!r}") from err
    stored = list(structure["fields"])
    fields = [f for f in attrs.fields(obj) if f.init] if attrs.has(obj) else []
    # a class may have gained fields with defaults since the checkpoint was written
    added = fields[len(stored) :]
    if (
        not attrs.has(obj)
        or [f.name for f in fields[: len(stored)]] != stored
        or any(f.default is attrs.NOTHING for f in added)
    ):
        raise ValueError(
            f"checkpoint state class {structure['class']!r} does not match its stored fields"
        )
    return obj(**{k: _unflatten(v, arrays) for k, v in structure["fields"].items()})


def save(path: str | os.PathLike, meta: dict, trees: dict[str, Any]) -> None:
    """Write ``trees`` (name → state/array tree) and ``meta`` atomically to ``path``."""
    path = Path(path)
    arrays: dict[str, np.ndarray] = {}
    structure = {name: _flatten(tree, name, arrays) for name, tree in trees.items()}
    full_meta = {"format": FORMAT, "version": VERSION, **meta, "structure": structure}
    arrays["meta"] = np.array(json.dumps(full_meta))
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, **arrays)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def load(path: str | os.PathLike) -> tuple[dict, dict[str, Any]]:
    """Read a checkpoint: ``(meta, trees)``.

    Raises
    ------
    ValueError
        If the file is missing, corrupt (whatever the damage: every member's
        CRC-32 is checked before anything is read), not a ladder_mcmc
        checkpoint, or of another format version.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"checkpoint {str(path)!r} does not exist")
    # Any exception while parsing the file is corruption (zipfile and numpy raise
    # NotImplementedError, RuntimeError, tokenize.TokenError... on damaged bytes).
    # Every member's CRC-32 is checked first: numpy reads an array's bytes without
    # reaching the end of its member (where zipfile checks the CRC) when a damaged
    # header announces a smaller shape, and would return a truncated array.
    try:
        with zipfile.ZipFile(path) as archive:
            damaged = archive.testzip()
        if damaged is not None:
            raise zipfile.BadZipFile(f"bad CRC-32 for {damaged!r}")
        data = np.load(path, allow_pickle=False)
        if not isinstance(data, np.lib.npyio.NpzFile):
            raise zipfile.BadZipFile("not an .npz archive")
    except Exception as err:
        raise ValueError(f"checkpoint {str(path)!r} is corrupt or unreadable: {err}") from err
    try:
        with data:
            meta = json.loads(str(data["meta"][()]))
            if meta.get("format") != FORMAT:
                raise ValueError(f"{str(path)!r} is not a ladder_mcmc checkpoint")
            if meta.get("version") not in READABLE:
                raise ValueError(
                    f"checkpoint {str(path)!r} has format version {meta.get('version')!r}; "
                    f"this ladder_mcmc reads versions {', '.join(map(str, READABLE))}"
                )
            trees = {k: _unflatten(v, data) for k, v in meta["structure"].items()}
    except ValueError:
        raise
    except Exception as err:
        raise ValueError(f"checkpoint {str(path)!r} is corrupt or unreadable: {err}") from err
    return meta, trees


__all__ = ["FORMAT", "READABLE", "VERSION", "fingerprint", "load", "save"]
