"""Progress output: a tqdm bar on a terminal, one plain line per bar elsewhere, never "nan"."""

from __future__ import annotations

import io
import sys

import numpy as np

from ladder_mcmc import lahmc, sample
from ladder_mcmc.hamiltonian.warmup.windows import stan_windows
from ladder_mcmc.models import IllConditionedGaussian
from ladder_mcmc.run.progress import Progress

TARGET = IllConditionedGaussian(2)
X0 = TARGET.sample(4, np.random.default_rng(0))


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def run(progress: bool) -> None:
    sample(lahmc(TARGET, 0.5, 5, 0.1), X0, 30, seed=0, warmup=20, progress=progress)


def test_off_a_terminal_one_line_per_bar_and_no_carriage_returns(capsys):
    run(progress=True)
    out, err = capsys.readouterr()
    assert out == ""
    assert "\r" not in err and "nan" not in err.lower()
    lines = err.splitlines()
    assert [line.split(" in ")[0] for line in lines] == [
        "warm-up: 20/20 steps",
        "sampling: 30/30 steps",
    ]


def test_progress_false_prints_nothing(capsys, monkeypatch):
    monkeypatch.setattr(sys, "stderr", Terminal())
    run(progress=False)
    assert sys.stderr.getvalue() == ""
    assert capsys.readouterr() == ("", "")


def test_on_a_terminal_tqdm_bars_in_steps(monkeypatch):
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    run(progress=True)
    text = terminal.getvalue()
    assert "\r" in text and "nan" not in text.lower()
    assert "warm-up: 100%" in text and "20/20" in text
    assert "sampling: 100%" in text and "30/30" in text
    assert "step/s" in text and "it/s" not in text


def test_counts_are_totals_and_close_is_idempotent():
    terminal = Terminal()
    bar = Progress(10, "resumed", stream=terminal)
    bar.update(6)  # a resumed run starts with the steps already done
    bar.update(6)
    bar.update(10)
    bar.close()
    bar.close()
    text = terminal.getvalue()
    assert "10/10" in text and text.count("\n") == 1 and "nan" not in text.lower()
    plain = io.StringIO()
    bar = Progress(10, "interrupted", stream=plain, unit="cell")
    bar.update(3)
    bar.close()
    bar.close()
    assert plain.getvalue().startswith("interrupted: 3/10 cells in ")


def test_warmup_progress_moves_within_a_window(monkeypatch):
    """The bar follows the driver's progress inside a stretch between window ends, not
    only at the ends (a 500-step window is one stretch)."""
    seen: list[tuple[str, int]] = []
    update = Progress.update

    def recording(self, done):
        seen.append((self.label, done))
        update(self, done)

    monkeypatch.setattr(Progress, "update", recording)
    sample(lahmc(TARGET), X0, 10, seed=0, warmup=300, progress=True, checks=False)
    warm = [done for label, done in seen if label == "warm-up"]
    assert warm[-1] == 300 and warm == sorted(warm)
    assert len(set(warm)) > len(stan_windows(300)[2]) + 1  # more than the ends and the last
