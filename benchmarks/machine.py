"""What a benchmark's figures depend on: the machine, the versions, the load."""

from __future__ import annotations

import datetime
import importlib.util
import os
import platform

import numpy as np

import ladder_mcmc


def _version(module: str) -> str:
    if importlib.util.find_spec(module) is None:
        return "not installed"
    return getattr(__import__(module), "__version__", "?")


def machine_facts() -> list[str]:
    """Versions, cores, BLAS threads and load: what the figures depend on."""
    lines = [
        f"date (UTC)      : {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M}",
        f"machine         : {platform.machine()} {platform.processor() or ''}".rstrip(),
        f"cpu count       : {os.cpu_count()}",
        f"python          : {platform.python_version()}",
        f"numpy           : {np.__version__}",
        f"jax             : {_version('jax')}",
        f"ladder_mcmc     : {ladder_mcmc.__version__}",
    ]
    try:
        from threadpoolctl import threadpool_info

        blas = [
            f"{i.get('internal_api')} {i.get('version')} threads={i.get('num_threads')}"
            for i in threadpool_info()
        ]
        lines.append(f"BLAS            : {'; '.join(blas) or 'none loaded'}")
    except ImportError:
        names = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
        env = {k: os.environ[k] for k in names if k in os.environ}
        lines.append(f"BLAS threads    : threadpoolctl not installed; env {env or 'unset'}")
    if hasattr(os, "getloadavg"):
        lines.append("load average    : " + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    return lines
