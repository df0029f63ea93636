"""Stan's warm-up windows: a fast initial buffer (the step size alone), slow windows that
double in length (the mass, the length and ``β`` are refitted at each one's end), and a
fast terminal buffer (the step size again, for the final mass)."""

from __future__ import annotations


def stan_windows(n_warmup: int) -> tuple[int, int, list[int]]:
    """Stan's warm-up schedule: (initial buffer, terminal buffer, slow window ends)."""
    init, term, base = 75, 50, 25
    if n_warmup < 20:
        return n_warmup, 0, []
    if init + term + base > n_warmup:
        init, term = int(0.15 * n_warmup), int(0.1 * n_warmup)
        base = n_warmup - init - term
    ends, start, size = [], init, base
    while start < n_warmup - term:
        end = start + size
        if end + 2 * size > n_warmup - term:
            end = n_warmup - term
        ends.append(end)
        start, size = end, 2 * size
    return init, term, ends


__all__ = ["stan_windows"]
