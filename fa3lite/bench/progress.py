"""A small progress bar on stderr (no dependency).

On a terminal the bar redraws in place; otherwise (a log, a CI pipe) it prints a line at every
`LOG_STEP_PERCENT` of progress so a captured log stays short.
"""
from __future__ import annotations

import sys
import time

BAR_WIDTH = 24
LOG_STEP_PERCENT = 10


class Progress:
    """Weighted progress: advance(weight, label) after each unit of work of the given weight."""

    def __init__(self, total: float, stream=None, is_tty: bool | None = None, clock=time.monotonic):
        self.total = max(float(total), 1e-9)
        self.done = 0.0
        self.stream = stream if stream is not None else sys.stderr
        self.is_tty = self.stream.isatty() if is_tty is None else is_tty
        self._clock = clock
        self._start = clock()
        self._last_logged_step = -1

    def line(self, label: str = "") -> str:
        frac = min(1.0, self.done / self.total)
        filled = int(round(frac * BAR_WIDTH))
        elapsed = self._clock() - self._start
        eta = elapsed / frac - elapsed if frac > 0 else None
        eta_txt = f"eta {_mmss(eta)}" if eta is not None else "eta --:--"
        return f"[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {frac * 100:3.0f}% {_mmss(elapsed)} {eta_txt} {label}"

    def advance(self, weight: float, label: str = "") -> None:
        self.done += weight
        if self.is_tty:
            self.stream.write("\r\x1b[2K" + self.line(label))
            self.stream.flush()
            return
        step = int(min(1.0, self.done / self.total) * 100) // LOG_STEP_PERCENT
        if step > self._last_logged_step:
            self._last_logged_step = step
            self.stream.write(self.line(label) + "\n")
            self.stream.flush()

    def close(self) -> None:
        if self.is_tty:
            self.stream.write("\n")
            self.stream.flush()


def _mmss(seconds: float) -> str:
    seconds = max(0, int(seconds))
    return f"{seconds // 60:d}:{seconds % 60:02d}"


def run_tracked(runner, items):
    """runner.run(items) with a Progress over runner.work_weight(items) set as runner.progress, closed
    however the run ends; returns what run returns."""
    progress = Progress(runner.work_weight(items))
    runner.progress = progress
    try:
        return runner.run(items)
    finally:
        progress.close()
