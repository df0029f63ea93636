"""``ladder-mcmc bench``: the benchmark suite (:mod:`ladder_mcmc.bench`) from the command line.

Runs a kernel factory (default ``lahmc``; ``--kernel module:callable`` for one's own) on
the suite's default set of models (``--hard`` adds the three hard ones, with NUTS beside
them), NumPyro's NUTS beside it (``--nuts``; on by default at full size when NumPyro is
installed, off at ``--quick``), prints the Markdown table, writes ``bench.json`` and
``bench.md`` into ``--out``, and exits with 1 when any run failed (0 when all passed).
Ctrl-C stops it: it says so, writes nothing, and exits with 130.

Examples
--------
.. code-block:: console

    $ ladder-mcmc bench --quick
    $ ladder-mcmc bench --models gauss2 kidiq --seeds 3 --nuts --json bench.json
    $ ladder-mcmc bench --quick --kernel my_kernels.py:reduced_flip
    $ ladder-mcmc bench --quick --hard
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ladder_mcmc.bench import NutsSettings, markdown, model_names, run_suite, to_json
from ladder_mcmc.bench.registry import DEFAULT, HARD, get_model
from ladder_mcmc.bench.suite import COMPILE_OUT, RunResult

HELP = (
    "Benchmark a kernel on the suite's models (NUTS beside it); exit 1 if a run failed, 130 "
    "if interrupted."
)

QUICK = {"seeds": 1, "chains": 4, "warmup": 500, "draws": 1000}
"""``--quick``: the whole suite in a few minutes on 2 cores."""
FULL = {"seeds": 3, "chains": 4, "warmup": 1000, "draws": 2000}
"""The default sizes."""


def load_factory(spec: str) -> Callable[[Any], Any]:
    """The kernel factory ``spec`` names: ``"module:callable"`` (a module on the path, the
    current folder included) or ``"path/to/file.py:callable"``.

    Raises
    ------
    ValueError
        A spec without ``:``, a module or file that cannot be imported, or a name that
        is not a callable in it.
    """
    where, colon, name = spec.rpartition(":")
    if not colon or not where or not name:
        raise ValueError(f"--kernel must be module:callable or file.py:callable, got {spec!r}")
    try:
        if where.endswith(".py") or os.sep in where:
            path = Path(where)
            loader = importlib.util.spec_from_file_location(path.stem, path)
            if loader is None or loader.loader is None or not path.is_file():
                raise ImportError(f"no Python file {where!r}")
            module = importlib.util.module_from_spec(loader)
            loader.loader.exec_module(module)
        else:
            if os.getcwd() not in sys.path and "" not in sys.path:
                sys.path.insert(0, os.getcwd())
            module = importlib.import_module(where)
    except Exception as err:
        raise ValueError(f"cannot import {where!r}: {type(err).__name__}: {err}") from err
    factory = getattr(module, name, None)
    if not callable(factory):
        raise ValueError(f"{where!r} has no callable {name!r}")
    return factory


def _kernel(text: str) -> Callable[[Any], Any]:
    try:
        return load_factory(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from err


def _model(text: str) -> str:
    try:
        return get_model(text).name
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from err


def add_arguments(p: argparse.ArgumentParser, integer: Callable[[int], Any], folder: Any) -> None:
    """The subcommand's arguments (``integer(minimum)`` and ``folder`` are the CLI's types)."""
    p.add_argument(
        "--models",
        nargs="+",
        type=_model,
        metavar="NAME",
        help="models to run (default: "
        + ", ".join(DEFAULT)
        + "); all: "
        + ", ".join(model_names()),
    )
    p.add_argument(
        "--hard",
        action="store_true",
        help="also run the hard models (" + ", ".join(HARD) + "), which every sampler tried, "
        "NUTS included, fails at the suite's sizes; NUTS runs beside them unless --no-nuts, "
        "and the exit status covers them",
    )
    p.add_argument(
        "--seeds",
        type=integer(1),
        help=f"run seeds 0 … N−1 (default {FULL['seeds']}; quick {QUICK['seeds']})",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help=f"small sizes: {QUICK['warmup']} warm-up + {QUICK['draws']} draws, "
        f"{QUICK['seeds']} seed, NUTS off unless --nuts (the whole suite in a few minutes)",
    )
    p.add_argument(
        "--nuts",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="run NumPyro's NUTS beside the kernel (default: yes, unless --quick)",
    )
    p.add_argument(
        "--kernel",
        type=_kernel,
        metavar="MODULE:CALLABLE",
        help="a kernel factory target -> kernel (default ladder_mcmc.lahmc), from a module "
        "or a file.py",
    )
    p.add_argument("--chains", type=integer(2), help="chains per run, >= 2 (4)")
    p.add_argument("--warmup", type=integer(0), help=f"warm-up steps ({FULL['warmup']})")
    p.add_argument("--draws", type=integer(4), help=f"draws per chain, >= 4 ({FULL['draws']})")
    p.add_argument(
        "--backend", choices=("numpy", "jax"), help="sample's backend (default: chosen by it)"
    )
    p.add_argument(
        "--nuts-chains",
        choices=("vectorized", "sequential"),
        default="vectorized",
        help="NumPyro's chain_method for NUTS (vectorized)",
    )
    p.add_argument(
        "--compile-out",
        choices=COMPILE_OUT,
        default="subtract",
        help="how compile time is left out of ESS/s: subtract JAX's compile events from "
        "one run (subtract), or time each compiled run again with JAX's persistent cache "
        "warm (warm: three runs each; subtract flatters NUTS's sequential chains, warm much "
        "less)",
    )
    p.add_argument("--out", type=folder, default="out", help="output folder (./out)")


def _progress(quiet: bool) -> Callable[[RunResult], None] | None:
    if quiet:
        return None

    def show(run: RunResult) -> None:
        f = run.figures
        if run.interrupted:
            print(f"{run.model} · {run.sampler} · seed {run.seed}: interrupted", file=sys.stderr)
            return
        print(
            f"{run.model} · {run.sampler} · seed {run.seed}: ESS/1000 grads "
            f"{f.ess_per_1000_grads:.3g}, R-hat {f.max_rhat:.4g}, max |z| {f.max_abs_z:.2f}, "
            f"{run.wall_time:.1f} s",
            file=sys.stderr,
            flush=True,
        )

    return show


def models_to_run(args: argparse.Namespace) -> tuple[tuple[str, ...], tuple[str, ...] | None, bool]:
    """The models to run, those NUTS runs on (None: all), and whether NUTS runs."""
    models = tuple(args.models or DEFAULT)
    if args.hard:
        models += tuple(m for m in HARD if m not in models)
    if args.nuts is not None:
        return models, None, args.nuts
    if not args.quick:
        return models, None, True
    hard = tuple(m for m in models if m in HARD) if args.hard else ()
    return models, hard or None, bool(hard)  # quick: NUTS beside the hard models only


def run(args: argparse.Namespace) -> tuple[dict, str]:
    """Run the suite as ``args`` say and print the table: the JSON-ready result (its
    ``passed`` says whether every run passed, ``interrupted`` whether Ctrl-C cut it short:
    then nothing is printed but that) and the Markdown."""
    sizes = QUICK if args.quick else FULL
    models, nuts_models, nuts = models_to_run(args)
    factory = args.kernel
    result = run_suite(
        factory,
        models=models,
        nuts_models=nuts_models,
        seeds=tuple(range(args.seeds or sizes["seeds"])),
        chains=args.chains or sizes["chains"],
        warmup=sizes["warmup"] if args.warmup is None else args.warmup,
        draws=args.draws or sizes["draws"],
        nuts=nuts,
        backend=args.backend,
        nuts_settings=NutsSettings(chain_method=args.nuts_chains),
        compile_out=args.compile_out,
        on_run=_progress(args.quiet),
    )
    if nuts and not result.settings.nuts:
        print(f"NUTS not run: NumPyro {result.meta['nuts']}", file=sys.stderr)
    if result.interrupted:
        last = result.runs[-1] if result.runs else None
        where = f" during {last.model}, {last.sampler}, seed {last.seed}" if last else ""
        print(
            f"bench: interrupted (Ctrl-C){where}; not judged, no draws kept, "
            f"bench.json and bench.md not written ({len(result.runs) - 1 if last else 0} "
            "runs had finished)",
            file=sys.stderr,
        )
        return to_json(result), ""
    text = markdown(result)
    print(text)
    out = to_json(result)
    out["meta"]["command"] = "ladder-mcmc " + " ".join(args.argv)
    return out, text


__all__ = ["FULL", "HELP", "QUICK", "add_arguments", "load_factory", "models_to_run", "run"]
