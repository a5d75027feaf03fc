"""Progress of long command-line work, always on stderr: a bar on a terminal, lines otherwise.

Why two forms: a person at a terminal wants one line redrawn in place, while a log file or a
CI job wants a few plain lines it can keep, without carriage returns. Neither is paced by the
clock: the bar is redrawn when its whole percent changes, and a line is written at every tenth
of the work, so what is printed depends on the work alone.
"""

from __future__ import annotations

import sys
from typing import TextIO

BAR_WIDTH = 30
LINE_STEPS = 10


class Progress:
    """`update(done)` as work advances, then `finish()`; `total` may be 0 (nothing to do)."""

    def __init__(self, label: str, total: int, *, unit: str = "", stream: TextIO | None = None):
        self.label = label
        self.total = total
        self.unit = f" {unit}" if unit else ""
        self.stream = stream if stream is not None else sys.stderr
        self.tty = self.stream.isatty()
        self._shown = -1  # the last percent (bar) or tenth (lines) written

    def update(self, done: int) -> None:
        share = 1.0 if self.total <= 0 else min(done / self.total, 1.0)
        mark = int(share * (100 if self.tty else LINE_STEPS))
        if mark == self._shown:
            return
        self._shown = mark
        if self.tty:
            filled = int(share * BAR_WIDTH)
            bar = "#" * filled + "-" * (BAR_WIDTH - filled)
            self._write(f"\r{self.label} [{bar}] {mark:3d}% {done}/{self.total}{self.unit}")
        else:
            self._write(f"{self.label}: {done}/{self.total}{self.unit} ({mark * 10}%)\n")

    def finish(self, done: int | None = None) -> None:
        """Show the end state; on a terminal, end the redrawn line."""
        self.update(self.total if done is None else done)
        if self.tty:
            self._write("\n")

    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()


class LateProgress:
    """A Progress whose total is known only once the work has begun (a backfill's count, a
    pull's steps): the bar or first line is made at the first update."""

    def __init__(self, label: str, *, unit: str = "") -> None:
        self.label = label
        self.unit = unit
        self.bar: Progress | None = None

    @property
    def started(self) -> bool:
        return self.bar is not None

    def update(self, done: int, total: int) -> None:
        if self.bar is None:
            self.bar = Progress(self.label, total, unit=self.unit)
        self.bar.total = total
        self.bar.update(done)

    def finish(self) -> None:
        if self.bar is not None:
            self.bar.finish()


def say(message: str) -> None:
    """A message for the person running the command: stderr, never stdout."""
    print(message, file=sys.stderr, flush=True)
