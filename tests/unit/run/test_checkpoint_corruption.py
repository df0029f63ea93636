"""A damaged checkpoint gives ``ValueError``, never another exception nor other data.

A real checkpoint (warm-up, a kernel state, draws over 4 kB) is damaged byte by
byte: every 11th byte and every byte of the zip directory flipped (two masks),
truncations every 29th byte (``-m slow``; the default run: every 53rd byte and every
5th of the directory, truncations every 97th).
``checkpoint.load`` must then either raise ``ValueError`` or, where the byte carries
nothing read (a local header's copy of the CRC or the time stamp), return exactly the
good file's content: the same metadata, structure, state classes, and every array of
the same dtype, shape and bytes. Anything else — ``NotImplementedError`` from a
damaged directory entry, a silently truncated array — fails. ``resume`` likewise
refuses or continues exactly as from the good file, and so for a damaged header of a
streamed draws file (its data rows carry no checksum; the last one is compared on
resume).
"""

from __future__ import annotations

import shutil
import zipfile

import numpy as np
import pytest
from trace_assertions import assert_same_run

from ladder_mcmc import Checkpoint, lahmc, resume, sample
from ladder_mcmc.models import IllConditionedGaussian
from ladder_mcmc.run import checkpoint

TARGET = IllConditionedGaussian(2)


def kernel():
    return lahmc(TARGET, 1.0, 10, 0.1)


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    path = tmp_path_factory.mktemp("good") / "c.npz"
    x0 = TARGET.sample(12, np.random.default_rng(0))
    sample(kernel(), x0, 40, seed=1, warmup=20, checkpoint=Checkpoint(path, every=30))
    with zipfile.ZipFile(path) as archive:
        directory = archive.start_dir
        assert max(i.file_size for i in archive.infolist()) > 4096
    return path, path.read_bytes(), directory


def content(meta: dict, trees: dict) -> tuple:
    """Everything a load returns, as comparable data (arrays as dtype, shape, bytes)."""
    arrays: dict[str, np.ndarray] = {}
    structure = {name: checkpoint._flatten(tree, name, arrays) for name, tree in trees.items()}
    leaves = {k: (a.dtype.str, a.shape, a.tobytes()) for k, a in arrays.items()}
    return meta, structure, leaves


def flips(good, stride: int = 11, directory_stride: int = 1) -> list[tuple[int, int]]:
    """(position, mask): every ``stride``-th byte and every ``directory_stride``-th byte of
    the zip directory, two masks."""
    _, data, directory = good
    positions = set(range(0, len(data), stride))
    positions = sorted(positions | set(range(directory, len(data), directory_stride)))
    return [(i, mask) for i in positions for mask in (0xFF, 0x01)]


def cuts(good, stride: int = 29) -> list[int]:
    return list(range(0, len(good[1]), stride))


# the default run damages every 53rd byte (and every 5th of the directory) and cuts every
# 97th; the slow run every 11th (and the whole directory) and 29th, as the module
# docstring says
STRIDES = [
    pytest.param(53, 5, 97, id="sparse", marks=pytest.mark.slow),  # the longest
    pytest.param(11, 1, 29, id="dense", marks=pytest.mark.slow),
]


@pytest.mark.parametrize(("flip_stride", "directory_stride", "cut_stride"), STRIDES)
def test_every_damage_is_a_value_error_or_the_same_content(
    good, tmp_path, flip_stride, directory_stride, cut_stride
):
    path, data, _ = good
    expected = content(*checkpoint.load(path))
    outcomes = {"refused": 0, "loaded": 0}

    def check(label, damaged):
        try:
            got = checkpoint.load(damaged)
        except ValueError:
            outcomes["refused"] += 1
            return
        assert content(*got) == expected, label
        outcomes["loaded"] += 1

    bad = tmp_path / "bad.npz"
    bad.write_bytes(data)
    with open(bad, "r+b") as fh:  # one byte patched in place (truncating a file is slow)
        for i, mask in flips(good, flip_stride, directory_stride):
            fh.seek(i)
            fh.write(bytes([data[i] ^ mask]))
            fh.flush()
            check(f"byte {i} ^ {mask:#x}", bad)
            fh.seek(i)
            fh.write(data[i : i + 1])
    for n in cuts(good, cut_stride):
        cut = tmp_path / f"first{n}.npz"
        cut.write_bytes(data[:n])
        check(f"first {n} bytes", cut)
    assert outcomes["refused"] > 5 * outcomes["loaded"]  # most bytes matter


def test_a_smaller_shape_in_an_array_header_is_refused(good, tmp_path):
    """numpy would read 20 rows of 40 without reaching the member's end, where the CRC is."""
    _, data, _ = good
    header = b"'shape': (40, 12, 2)"
    assert data.count(header) == 1
    bad = tmp_path / "bad.npz"
    bad.write_bytes(data.replace(header, b"'shape': (20, 12, 2)"))
    with pytest.raises(ValueError, match="corrupt"):
        checkpoint.load(bad)


def test_resume_refuses_damage_or_continues_as_from_the_good_file(good, tmp_path):
    path, data, _ = good
    reference = tmp_path / "reference.npz"
    shutil.copy(path, reference)
    whole = resume(reference, kernel(), 5)
    damaged = [(f"byte {i} ^ {m:#x}", i, m) for i, m in flips(good)[::41]]
    damaged += [(f"first {n} bytes", n, None) for n in cuts(good)[::7]]
    for k, (label, i, mask) in enumerate(damaged):
        bad = tmp_path / f"bad{k}.npz"
        if mask is None:
            bad.write_bytes(data[:i])
        else:
            bad.write_bytes(data[:i] + bytes([data[i] ^ mask]) + data[i + 1 :])
        try:
            trace = resume(bad, kernel(), 5)
        except ValueError:
            continue
        try:
            assert_same_run(trace, whole)
        except AssertionError as err:
            raise AssertionError(f"{label}: resumed, but not as the good file does") from err


def test_a_damaged_draws_file_header_is_refused_or_harmless(tmp_path):
    """The draws streamed to a file: its ``.npy`` header, byte by byte."""
    x0 = TARGET.sample(3, np.random.default_rng(0))
    options = dict(seed=1, warmup=0)
    whole = sample(kernel(), x0, 15, checkpoint=Checkpoint(every=5), **options)
    files = dict(checkpoint=Checkpoint(tmp_path / "c.npz", every=5), draws_file=tmp_path / "d.npy")
    sample(kernel(), x0, 10, **files, **options)
    ckpt, draws = ((tmp_path / name).read_bytes() for name in ("c.npz", "d.npy"))
    for i in range(0, 128, 3):
        for mask in (0xFF, 0x01):
            run = tmp_path / f"{i}-{mask}"
            run.mkdir()
            (run / "c.npz").write_bytes(ckpt)
            (run / "d.npy").write_bytes(draws[:i] + bytes([draws[i] ^ mask]) + draws[i + 1 :])
            try:
                trace = resume(run / "c.npz", kernel(), 5)
            except ValueError:
                continue
            assert_same_run(trace, whole)
