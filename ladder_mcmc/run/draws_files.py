"""Draws streamed to ``.npy`` files on disk (``sample(..., draws_file=...)``).

A long run's draws need not fit in memory: :func:`memmap_allocator` gives the
:class:`~ladder_mcmc.run.recorder.Recorder` memory-mapped ``.npy`` files to write
them to, whose finished rows it hands back to the operating system as the run goes
(:func:`ladder_mcmc.arrays.release_rows`), so resident memory stays bounded
(``benchmarks/results/memory.md``).
A checkpointed run records its draws file instead of copying the draws, and
:func:`~ladder_mcmc.run.resume.resume` finds it again (:func:`locate_draws_file`),
checks it against the checkpoint (:func:`open_draws_files`) and grows it in place
(:func:`grow_npy_rows`) or copies it to a new file (:func:`copy_rows`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ladder_mcmc.arrays import release_rows
from ladder_mcmc.ladder import batch

RELEASE_BYTES = 64 * 2**20
"""Disk-backed draws: pages of finished rows are handed back to the OS every this many bytes."""


def memmap_allocator(path: str | os.PathLike) -> Callable[[tuple, np.dtype], np.ndarray]:
    """An ``allocate`` for :class:`Recorder` that puts the draws in ``.npy`` files on disk.

    The first array goes to ``path``; if a draw has several leaves (an attrs
    state), leaf ``i ≥ 1`` goes to ``<stem>.<i><suffix>`` beside it. Each file
    is a standard ``.npy`` (``numpy.lib.format.open_memmap``), readable with
    ``np.load(path, mmap_mode="r")``. The recorder writes rows as chains finish
    them and releases the pages of finished rows, so the process's resident
    memory stays bounded however long the run (see ``benchmarks/results/memory.md``).

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> folder = tempfile.mkdtemp()
    >>> allocate = memmap_allocator(os.path.join(folder, "draws.npy"))
    >>> a = allocate((3, 2), np.float64)
    >>> a[:] = 1.0
    >>> a.flush()
    >>> np.load(os.path.join(folder, "draws.npy")).sum()
    np.float64(6.0)
    """
    path = Path(path)
    count = 0

    def allocate(shape: tuple, dtype: np.dtype) -> np.ndarray:
        nonlocal count
        target = draws_file_path(path, count)
        count += 1
        return np.lib.format.open_memmap(target, mode="w+", dtype=dtype, shape=shape)

    return allocate


def draws_file_path(path: str | os.PathLike, leaf: int) -> Path:
    """The file of leaf ``leaf`` of the draws streamed to ``path``: ``path`` itself for
    leaf 0, ``<stem>.<leaf><suffix>`` beside it for the others (:func:`memmap_allocator`)."""
    path = Path(path)
    return path if leaf == 0 else path.with_name(f"{path.stem}.{leaf}{path.suffix}")


def _npy_layout(path: Path) -> tuple[int, int, tuple, np.dtype, bool]:
    """``(prefix, offset, shape, dtype, fortran_order)`` of a ``.npy`` file's header:
    ``prefix`` = bytes before the header text, ``offset`` = bytes before the data."""
    fmt = np.lib.format
    with open(path, "rb") as fh:
        version = fmt.read_magic(fh)
        if version == (1, 0):
            shape, fortran, dtype = fmt.read_array_header_1_0(fh)
        elif version in ((2, 0), (3, 0)):
            shape, fortran, dtype = fmt.read_array_header_2_0(fh)
        else:  # pragma: no cover - read_magic accepts only these today
            raise ValueError(f"unsupported .npy version {version}")
        offset = fh.tell()
    prefix = fmt.MAGIC_LEN + (2 if version == (1, 0) else 4)
    return prefix, offset, tuple(shape), dtype, bool(fortran)


def grow_npy_rows(path: str | os.PathLike, rows: int, *, dry_run: bool = False) -> np.memmap | None:
    """Grow the leading axis of the C-ordered ``.npy`` file ``path`` to ``rows``, in place.

    The file is extended (its old bytes untouched, the new rows zero) and its
    header rewritten with the new shape, padded to its old length, so the data
    stay where they were: memory maps of the old rows stay valid. numpy writes
    headers with room for a leading axis of 21 digits (``GROWTH_AXIS_MAX_DIGITS``),
    so this always fits for files numpy ≥ 1.23 wrote. The file is extended
    before the header changes: a crash in between leaves a readable file with
    the old shape. Returns the file opened ``r+`` as a memory map (None with
    ``dry_run``, which only checks that the growth is possible).

    Raises
    ------
    ValueError
        If the file is Fortran-ordered, already longer than ``rows``, or its
        header has no room for the new shape.
    """
    path = Path(path)
    prefix, offset, shape, dtype, fortran = _npy_layout(path)
    if fortran:
        raise ValueError(f"draws file {str(path)!r} is Fortran-ordered; cannot grow it")
    if not shape or shape[0] > rows:
        raise ValueError(
            f"draws file {str(path)!r} has shape {shape}; cannot grow it to {rows} rows"
        )
    header = {
        "descr": np.lib.format.dtype_to_descr(dtype),
        "fortran_order": False,
        "shape": (rows,) + shape[1:],
    }
    text = repr(header).encode("latin1")
    room = offset - prefix
    if len(text) + 1 > room:
        raise ValueError(
            f"the header of draws file {str(path)!r} has no room for shape {header['shape']}"
        )
    if dry_run:
        return None
    if shape[0] == rows:
        return np.lib.format.open_memmap(path, mode="r+")
    size = offset + rows * int(np.prod(shape[1:], dtype=np.int64)) * dtype.itemsize
    if os.path.getsize(path) < size:
        os.truncate(path, size)
    with open(path, "r+b") as fh:
        fh.seek(prefix)
        fh.write(text + b" " * (room - len(text) - 1) + b"\n")
        fh.flush()
        os.fsync(fh.fileno())
    return np.lib.format.open_memmap(path, mode="r+")


def check_writable_folder(what: str, path: Path) -> None:
    """Refuse a file ``path`` whose folder does not exist or cannot be written to."""
    if not path.parent.is_dir():
        raise ValueError(f"{what} folder {str(path.parent)!r} does not exist")
    if not os.access(path.parent, os.W_OK):
        raise ValueError(f"{what} folder {str(path.parent)!r} is not writable")


def check_draws_file(path: str | os.PathLike, n_leaves: int = 1) -> Path:
    """Refuse, before sampling, a draws file that exists or cannot be written.

    ``n_leaves``: files the draws need (``<stem>.<i>.npy`` for leaves ``i ≥ 1``).
    """
    path = Path(path)
    for leaf in range(n_leaves):
        if draws_file_path(path, leaf).exists():
            raise ValueError(
                f"draws_file {str(draws_file_path(path, leaf))!r} already exists; "
                "remove it or choose another"
            )
    check_writable_folder("draws_file", path)
    return path


def locate_draws_file(stored: dict, ckpt: Path, to_create: bool = False) -> Path:
    """The draws file a checkpoint names: beside it as recorded (relative path, so a
    folder moved as a whole still works), else at the recorded absolute path.

    ``to_create``: the file need not exist yet (no draw kept), only its folder.
    """
    candidates = []
    if stored.get("relative") is not None:
        candidates.append(ckpt.resolve().parent / stored["relative"])
    candidates.append(Path(stored["path"]))
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    for candidate in candidates if to_create else []:
        if candidate.parent.is_dir() and os.access(candidate.parent, os.W_OK):
            return candidate
    raise ValueError(
        f"the draws file of checkpoint {str(ckpt)!r} is missing: looked for "
        + " and ".join(repr(str(c)) for c in candidates)
    )


def open_draws_files(
    base: Path, template: Any, kept: int, n_kept: int, in_place: bool
) -> list[np.memmap]:
    """Open (read-only) and check the files holding a checkpointed run's draws.

    ``template``: the checkpoint's last kept row of draws (leaves (1, chains, ...),
    or (0, chains, ...) if none was kept). Each file must be a C-ordered ``.npy``
    of the template's dtype and trailing shape, with at least ``kept`` rows,
    whose row ``kept - 1`` equals the template bit for bit (else it is not this
    run's file). ``in_place``: the resumed run will write into these files, so
    they must be writable and not longer than ``n_kept`` rows.
    """
    opened = []
    for i, want in enumerate(batch.leaves(template)):
        path = draws_file_path(base, i)
        if not path.is_file():
            raise ValueError(f"draws file {str(path)!r} of the checkpoint is missing")
        try:
            arr = np.load(path, mmap_mode="r", allow_pickle=False)
        except Exception as err:  # a damaged header raises, e.g., tokenize.TokenError
            raise ValueError(
                f"draws file {str(path)!r} is not a readable .npy file: {err}"
            ) from err
        if (
            not isinstance(arr, np.memmap)
            or arr.dtype != want.dtype
            or arr.shape[1:] != want.shape[1:]
            or not arr.flags.c_contiguous
        ):
            raise ValueError(
                f"draws file {str(path)!r} holds {getattr(arr, 'dtype', '?')} of shape "
                f"{getattr(arr, 'shape', '?')}; the checkpoint's draws are {want.dtype} of "
                f"shape (rows,) + {want.shape[1:]} (C order)"
            )
        if arr.shape[0] < kept:
            raise ValueError(
                f"draws file {str(path)!r} holds {arr.shape[0]} rows; the checkpoint has {kept}"
            )
        if kept and arr[kept - 1].tobytes() != want[0].tobytes():
            raise ValueError(
                f"draws file {str(path)!r} does not hold this run's draws (row {kept - 1} "
                "differs from the checkpoint's copy): was it overwritten by another run?"
            )
        if in_place:
            if arr.shape[0] > n_kept:
                raise ValueError(
                    f"draws file {str(path)!r} holds {arr.shape[0]} rows but the resumed run "
                    f"keeps {n_kept}: it would be cut short; resume with more steps, or "
                    "give resume(..., draws_file=NEW) to write the whole run to a new file"
                )
            if not os.access(path, os.W_OK):
                raise ValueError(f"draws file {str(path)!r} is not writable")
            grow_npy_rows(path, n_kept, dry_run=True)
        opened.append(arr)
    return opened


def copy_rows(dest: np.ndarray, src: np.ndarray, rows: int) -> None:
    """``dest[:rows] = src[:rows]`` in slices, releasing a disk-backed ``dest``'s pages."""
    row_bytes = max(1, dest.strides[0])
    chunk = max(1, RELEASE_BYTES // row_bytes)
    for lo in range(0, rows, chunk):
        hi = min(rows, lo + chunk)
        dest[lo:hi] = src[lo:hi]
        if isinstance(dest, np.memmap):
            release_rows(dest, lo, hi)
    if isinstance(dest, np.memmap):
        dest.flush()
