"""A checkpoint knows its model: the fingerprint hashes the log density's code and the JAX
arrays it reads by value, so another model is refused and the same one rebuilt resumes."""

from __future__ import annotations

import functools
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from ladder_mcmc import Checkpoint, lahmc, resume, sample
from ladder_mcmc.models import FunctionTarget
from ladder_mcmc.run import fingerprints
from ladder_mcmc.run.fingerprints import fingerprint

jax = pytest.importorskip("jax")
jnp = jax.numpy
from ladder_mcmc.models import from_jax  # noqa: E402

X0 = np.random.default_rng(0).normal(size=(4, 2))
FIXED = {"step_size": 0.5, "n_leapfrog": 3, "beta": 0.5, "inverse_mass": np.ones(2)}


def jax_normal(shift):
    """Two sources that differ only in code: N(0, 1) and N(3, 1)."""
    if shift == 0:
        return lahmc(from_jax(lambda x: -0.5 * jnp.sum(x**2), 2), **FIXED)
    return lahmc(from_jax(lambda x: -0.5 * jnp.sum((x - 3.0) ** 2), 2), **FIXED)


def numpy_normal(shift):
    if shift == 0:
        return lahmc(FunctionTarget(lambda x: 0.5 * (x**2).sum(1), lambda x: x, dim=2), **FIXED)
    return lahmc(
        FunctionTarget(lambda x: 0.5 * ((x - 3.0) ** 2).sum(1), lambda x: x - 3.0, dim=2),
        **FIXED,
    )


def jax_with_data(mean):
    """A JAX model whose data is a ``jax.Array`` its closure captures."""
    data = jnp.asarray(mean)
    return lahmc(from_jax(lambda x: -0.5 * jnp.sum((x - data) ** 2), 2), **FIXED)


def run_and_resume(tmp_path, first, then):
    path = tmp_path / "run.npz"
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # nothing here escapes the fingerprint
        # numpy backend: what is hashed does not depend on it, and nothing compiles a loop
        sample(first, X0, 6, seed=1, warmup=0, checks=False, backend="numpy",
               checkpoint=Checkpoint(path, every=3))  # fmt: skip
    return resume(path, then, 3, checks=False)


@pytest.mark.parametrize("make", [jax_normal, numpy_normal], ids=["from_jax", "FunctionTarget"])
def test_models_that_differ_only_in_code_are_refused_and_a_rebuilt_one_resumes(tmp_path, make):
    assert make(0).describe() == make(3).describe()  # the description alone accepts it
    with pytest.raises(ValueError, match="other parameters or code"):
        run_and_resume(tmp_path, make(0), make(3))
    (tmp_path / "run.npz").unlink()
    assert run_and_resume(tmp_path, make(0), make(0)).n_steps == 9


def test_jax_data_in_a_closure_is_hashed_by_value(tmp_path):
    assert fingerprint(jax_with_data([0.0, 0.0])) == fingerprint(jax_with_data([0.0, 0.0]))
    with pytest.raises(ValueError, match="other parameters or code"):
        run_and_resume(tmp_path, jax_with_data([0.0, 0.0]), jax_with_data([0.0, 1e-12]))


def test_the_checks_catch_their_broken_variants(monkeypatch):
    """Without the code (or with JAX arrays by type only, as before) the models above are
    indistinguishable: the tests above would fail."""
    assert fingerprint(jax_normal(0)) != fingerprint(jax_normal(3))
    monkeypatch.setattr(fingerprints._Feeder, "code", lambda self, *args: None)
    assert fingerprint(jax_normal(0)) == fingerprint(jax_normal(3))
    assert fingerprint(numpy_normal(0)) == fingerprint(numpy_normal(3))
    monkeypatch.undo()
    monkeypatch.setattr(fingerprints, "_array_of", lambda obj: None)
    assert fingerprint(jax_with_data([0.0, 0.0])) == fingerprint(jax_with_data([0.0, 1.0]))


def helper_one(x):
    return x + 1.0


def helper_two(x):
    return x + 2.0


def test_code_reached_through_globals_defaults_partials_methods_and_jit():
    import jax

    def calls_one(x):
        return helper_one(x)

    def calls_two(x):
        return helper_two(x)

    calls_two.__qualname__ = calls_one.__qualname__
    assert fingerprint(calls_one) != fingerprint(calls_two)  # the global function's code

    def scaled(x, s):
        return x * s

    assert fingerprint(functools.partial(scaled, s=1.0)) != fingerprint(
        functools.partial(scaled, s=2.0)
    )
    assert fingerprint(jax.jit(helper_one)) != fingerprint(jax.jit(helper_two))
    assert fingerprint(jax.jit(helper_one)) == fingerprint(jax.jit(helper_one))

    class Model:
        def __init__(self, mean):
            self.mean, self.calls = mean, 0

        def energy(self, x):
            self.calls += 1
            return 0.5 * ((x - self.mean) ** 2).sum(1)

    a, b = Model(np.zeros(2)), Model(np.ones(2))
    before = fingerprint(a.energy)
    a.energy(X0)  # a counter (an int attribute) is not a parameter
    assert fingerprint(a.energy) == before != fingerprint(b.energy)
    assert fingerprint(np.exp) != fingerprint(np.sin)


SOURCE = """
import numpy as np
import jax.numpy as jnp
from ladder_mcmc import lahmc
from ladder_mcmc.models import from_jax

DATA = jnp.asarray([0.5, -1.0])


def shift(x):
    return x - DATA


def kernel():
    return lahmc(from_jax(lambda x: -0.5 * jnp.sum(shift(x) ** 2), 2), 0.5, 3, 0.5,
                 inverse_mass=np.ones(2))
"""


def test_the_same_source_gives_the_same_fingerprint_in_another_process(tmp_path, monkeypatch):
    (tmp_path / "model_src.py").write_text(SOURCE)
    monkeypatch.syspath_prepend(str(tmp_path))
    import model_src

    here = fingerprint(model_src.kernel())
    code = "import model_src; from ladder_mcmc.run.fingerprints import fingerprint; "
    code += "print(fingerprint(model_src.kernel()))"
    there = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
        # the same JAX precision as here: an earlier test in this process may have turned
        # x64 on, and DATA is then float64 there, float32 otherwise (another model)
        env={
            "PYTHONPATH": str(tmp_path),
            "PYTHONHASHSEED": "123",
            "PATH": "",
            "JAX_ENABLE_X64": str(bool(jax.config.jax_enable_x64)),
        },
    ).stdout.strip()
    assert there == here
    (tmp_path / "other_src.py").write_text(SOURCE.replace("x - DATA", "x + DATA"))
    import other_src

    assert fingerprint(other_src.kernel()) != here


def test_a_part_that_cannot_be_fingerprinted_is_named_once_when_the_checkpoint_is_written(
    tmp_path,
):
    table = {"mean": 0.0}  # a dict read by the energy: hashed by its type only

    def energy(x):
        return 0.5 * ((x - table["mean"]) ** 2).sum(1)

    def grad(x):
        return x - table["mean"]

    kernel = lahmc(FunctionTarget(energy, grad, dim=2), **FIXED)
    path = tmp_path / "run.npz"
    with pytest.warns(UserWarning, match=r"energy\.<table> \(a dict") as caught:
        sample(kernel, X0, 6, seed=1, warmup=0, checks=False, checkpoint=Checkpoint(path, every=2))
    assert sum("fingerprint" in str(w.message) for w in caught) == 1  # once, not per block
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        resume(path, kernel, 2, checks=False)  # not again on resume
        fingerprint(numpy_normal(0))  # nor for a kernel hashed whole


def test_the_package_installed_among_the_libraries_still_reaches_the_users_code(monkeypatch):
    """Installed from a wheel, this package sits in site-packages with the libraries
    whose callables are named, not hashed; its wrappers (``from_jax``'s) must still be
    followed to the user's function. Simulated by counting the package's folder as a
    library root (this checkout is an editable install)."""
    import ladder_mcmc

    package_root = Path(ladder_mcmc.__file__).resolve().parent
    roots = fingerprints._library_roots()
    library_module = fingerprints._library_module
    monkeypatch.setattr(fingerprints, "_library_roots", lambda: (*roots, package_root))
    library_module.cache_clear()
    try:
        assert library_module("numpy")
        assert not library_module("ladder_mcmc.models.adapters.jax_models")
        assert fingerprint(jax_normal(0)) != fingerprint(jax_normal(3))
        # the broken variant: the package counted as a library, the two models collide
        monkeypatch.setattr(
            fingerprints,
            "_library_module",
            lambda name: bool(name) and (name.startswith("ladder_mcmc") or library_module(name)),
        )
        assert fingerprint(jax_normal(0)) == fingerprint(jax_normal(3))
    finally:
        library_module.cache_clear()
