"""``ladder-mcmc``: reproduce the paper's table 1 and figures 2 and 3 from the command line.

Subcommands ``table1``, ``figure2``, ``figure3`` and ``paper`` (all three);
``posterior NAME``, which samples one of the posteriordb posteriors with the defaults
and prints its summary under the model's parameter names (exit code 1 when the run
failed: :mod:`ladder_mcmc.bench.verdict`); and ``bench``, the benchmark suite
(:mod:`ladder_mcmc.paper.bench_command`; exit code 1 when a run failed). Both exit with
130, judging nothing, when Ctrl-C cuts a run short. Each paper subcommand
writes JSON, a Markdown table and PNG figures into ``--out DIR``; ``--quick``
(the default) finishes each subcommand in a few minutes on 2 cores, ``--full``
uses sizes like the paper's. PNGs need matplotlib (``pip install
ladder_mcmc[plots]``); without it the JSON and Markdown are still written.

Examples
--------
.. code-block:: console

    $ ladder-mcmc paper --quick --out out
    $ python -m ladder_mcmc table1 --chains 100 --steps 2000 --seed 3 --json t1.json
    $ ladder-mcmc posterior eight_schools-eight_schools_noncentered --steps 1000
    $ ladder-mcmc bench --quick
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ladder_mcmc import __version__
from ladder_mcmc.paper import (
    bench_command,
    figure2,
    figure3,
    plotting,
    posterior_command,
    table1,
)

# Sizes per subcommand: chains and steps per run (figure 2: per target).
QUICK = {
    "table1": {"chains": 100, "steps": 1000},
    "figure2": {
        "gauss2": (100, 4000),
        "gauss100": (100, 4000),
        "rough": (100, 4000),
    },
    "figure3": {"chains": 200, "steps": 800, "size": 5},
}
FULL = {
    "table1": {"chains": 100, "steps": 10000},
    "figure2": {
        "gauss2": (1000, 40000),
        "gauss100": (100, 40000),
        "rough": (500, 10000),
    },
    "figure3": {"chains": 200, "steps": 2500, "size": 7},
}


def _write(path: Path, text: str) -> None:
    """Write atomically: a temporary file in the same folder, then ``os.replace``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _write_json(path: Path, obj: dict) -> None:
    _write(path, json.dumps(obj, indent=1, allow_nan=False) + "\n")


def _provenance(args: argparse.Namespace, elapsed: float) -> dict:
    return {
        "command": "ladder-mcmc " + " ".join(args.argv),
        "size": "full" if args.full else ("custom" if args.custom else "quick"),
        "elapsed_seconds": round(elapsed, 1),
        "ladder_mcmc": __version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
    }


def _log(args: argparse.Namespace, message: str) -> None:
    if not args.quiet:
        print(message, file=sys.stderr, flush=True)


def _plot(args: argparse.Namespace, make) -> list[str]:
    if not plotting.have_matplotlib():
        print(f"PNG figures skipped: {plotting.PLOTS_HINT}", file=sys.stderr, flush=True)
        return []
    made = make()
    paths = made if isinstance(made, list) else [made]
    return [Path(p).name for p in paths]  # file names, relative to --out


def _finish(args: argparse.Namespace, name: str, result: dict, elapsed: float, markdown) -> dict:
    """Record provenance, write ``<name>.json`` and ``<name>.md``, print the table."""
    result["provenance"] = _provenance(args, elapsed)
    _write_json(args.out / f"{name}.json", result)
    text = markdown(result)
    _write(args.out / f"{name}.md", text)
    print(text)
    return result


def do_table1(args: argparse.Namespace) -> dict:
    sizes = dict((FULL if args.full else QUICK)["table1"])
    sizes["chains"] = args.chains or sizes["chains"]
    sizes["steps"] = args.steps or sizes["steps"]
    start = time.perf_counter()
    result = table1.run_table1(sizes["chains"], sizes["steps"], args.seed, not args.quiet)
    elapsed = time.perf_counter() - start
    return _finish(args, "table1", result, elapsed, table1.table1_markdown)


def do_figure2(args: argparse.Namespace) -> dict:
    sizes = dict((FULL if args.full else QUICK)["figure2"])
    sizes = {t: (args.chains or c, args.steps or s) for t, (c, s) in sizes.items()}
    start = time.perf_counter()
    result = figure2.run_figure2(sizes, args.seed, not args.quiet)
    elapsed = time.perf_counter() - start
    result["figures"] = _plot(args, lambda: plotting.plot_figure2(result, args.out))
    return _finish(args, "figure2", result, elapsed, figure2.figure2_markdown)


def do_figure3(args: argparse.Namespace) -> dict:
    sizes = dict((FULL if args.full else QUICK)["figure3"])
    chains = args.chains or sizes["chains"]
    steps = args.steps or sizes["steps"]
    size = args.grid or sizes["size"]
    start = time.perf_counter()
    result = figure3.run_figure3(chains, steps, size, args.seed, not args.quiet)
    elapsed = time.perf_counter() - start
    result["figures"] = _plot(args, lambda: plotting.plot_figure3(result, args.out))
    return _finish(args, "figure3", result, elapsed, figure3.figure3_markdown)


def _made_output_folder(out: Path) -> bool:
    """Make ``--out`` (and its parents); False, with a one-line message, if it cannot be."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        print(f"ladder-mcmc: cannot make the output folder {str(out)!r}: {err}", file=sys.stderr)
        return False
    return True


def do_bench(args: argparse.Namespace) -> int:
    """``ladder-mcmc bench``: the suite; ``bench.json`` and ``bench.md`` in ``--out``; exit
    code 1 if a run failed."""
    if not _made_output_folder(args.out):
        return 2
    try:
        result, text = bench_command.run(args)
    except KeyboardInterrupt:
        print("bench: interrupted (Ctrl-C); nothing written", file=sys.stderr)
        return 130
    if result["interrupted"]:
        return 130  # bench_command said so and wrote nothing
    _write_json(args.out / "bench.json", result)
    _write(args.out / "bench.md", text)
    if args.json is not None:
        _write_json(args.json, result)
    _log(
        args,
        f"bench: {result['passed_runs']} of {result['total_runs']} runs passed; "
        f"outputs in {args.out}",
    )
    return 0 if result["passed"] else 1


def do_paper(args: argparse.Namespace) -> dict:
    return {
        "table1": do_table1(args),
        "figure2": do_figure2(args),
        "figure3": do_figure3(args),
    }


COMMANDS = {
    "table1": (do_table1, "Table 1: fraction of transitions to each rung (12 rows)."),
    "figure2": (do_figure2, "Figure 2: autocorrelation against gradient evaluations."),
    "figure3": (do_figure3, "Figure 3: gradients to autocorrelation 0.5 over (ε, β) and (ε, M)."),
    "paper": (do_paper, "Table 1, figure 2 and figure 3."),
}


# Fewest sampling steps each subcommand can tabulate: table 1's rung fractions
# and figure 2's autocorrelations need two steps per chain; figure 3 runs every
# cell for at least 4 steps whatever --steps says.
MIN_STEPS = {"table1": 2, "figure2": 2, "figure3": 1, "paper": 2}
MIN_GRID = 2  # figure 3 spans each axis from one end to the other


def _integer(minimum: int):
    """An argparse ``type``: an integer ``>= minimum``, else a usage error naming the value."""

    def integer(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < minimum:
            raise argparse.ArgumentTypeError(f"must be an integer >= {minimum}, got {text!r}")
        return value

    return integer


def _cannot_write_in(folder: Path) -> str | None:
    """Why files cannot be written in ``folder`` (made as needed), or None if they can."""
    ancestor = folder
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        return f"{str(ancestor)!r} is a file, not a folder"
    if not os.access(ancestor, os.W_OK | os.X_OK):
        return f"folder {str(ancestor)!r} is not writable"
    return None


def _out_folder(text: str) -> Path:
    """An argparse ``type`` for ``--out``: a folder (made if missing), not a file."""
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is an existing file, not a folder")
    problem = _cannot_write_in(path)
    if problem:
        raise argparse.ArgumentTypeError(f"cannot write into {text!r}: {problem}")
    return path


def _json_file(text: str) -> Path:
    """An argparse ``type`` for ``--json``: a file (not a folder) that can be written."""
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a folder, not a file")
    if not path.parent.exists():  # a file's folder is not made: a typo must not pass
        raise argparse.ArgumentTypeError(
            f"cannot write {text!r}: folder {str(path.parent)!r} does not exist"
        )
    problem = _cannot_write_in(path.parent)
    if problem:
        raise argparse.ArgumentTypeError(f"cannot write {text!r}: {problem}")
    return path


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ladder-mcmc",
        description="Look-ahead MCMC on the ladder of a reversible map: reproduce "
        "'Hamiltonian Monte Carlo Without Detailed Balance' (Sohl-Dickstein, Mudigonda & "
        "DeWeese, ICML 2014: table1, figure2, figure3, paper), sample a bundled posterior "
        "(posterior), and judge any kernel against reference moments beside NUTS (bench).",
    )
    parser.add_argument("--version", action="version", version=f"ladder_mcmc {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (_, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        size = p.add_mutually_exclusive_group()
        size.add_argument(
            "--quick",
            action="store_true",
            help="small sizes (default"
            + ("; the whole paper in under two minutes on 2 cores)" if name == "paper" else ")"),
        )
        size.add_argument("--full", action="store_true", help="sizes like the paper's (long)")
        p.add_argument("--out", type=_out_folder, default="out", help="output folder (./out)")
        p.add_argument("--chains", type=_integer(1), help="chains per run (overrides the size)")
        p.add_argument(
            "--steps",
            type=_integer(MIN_STEPS[name]),
            help=f"sampling steps per run, at least {MIN_STEPS[name]} ("
            + ("per cell at M = 10; " if name in ("figure3", "paper") else "")
            + "overrides the size)",
        )
        p.add_argument("--seed", type=_integer(0), default=0, help="master seed, >= 0 (0)")
        p.add_argument("--json", type=_json_file, help="also write the JSON result to this file")
        p.add_argument("--quiet", action="store_true", help="no progress bars or messages")
        if name in ("figure3", "paper"):
            p.add_argument(
                "--grid",
                type=_integer(MIN_GRID),
                help=f"figure 3 grid points per axis, at least {MIN_GRID}",
            )
    p = sub.add_parser("posterior", help=posterior_command.HELP, description=posterior_command.HELP)
    posterior_command.add_arguments(p, _integer)
    p.add_argument("--json", type=_json_file, help="also write the JSON result to this file")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p = sub.add_parser("bench", help=bench_command.HELP, description=bench_command.HELP)
    bench_command.add_arguments(p, _integer, _out_folder)
    p.add_argument("--json", type=_json_file, help="also write the JSON result to this file")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``ladder-mcmc`` console script; returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    args.argv = argv
    if args.command == "posterior":
        try:
            result = posterior_command.run(args)
        except KeyboardInterrupt:
            print("posterior: interrupted (Ctrl-C); no draws kept", file=sys.stderr)
            return 130
        if result.get("interrupted"):
            return 130  # posterior_command said so; nothing judged, nothing written
        if args.json is not None:
            _write_json(args.json, result)
        return 0 if result["passed"] else 1
    if args.command == "bench":
        return do_bench(args)
    args.custom = bool(args.chains or args.steps)
    if not hasattr(args, "grid"):
        args.grid = None
    if not _made_output_folder(args.out):
        return 2
    start = time.perf_counter()
    func = COMMANDS[args.command][0]
    try:
        result = func(args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    if args.json is not None:
        _write_json(args.json, result)
    _log(
        args, f"{args.command}: done in {time.perf_counter() - start:.1f} s; outputs in {args.out}"
    )
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
