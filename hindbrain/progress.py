"""Progress of the long commands (demo, replay, hindsight, seed): a live bar in a terminal,
plain lines in a log.

A command splits its work into named stages (``with stage("the fleet", total=216, unit="tasks")
as s: ... s.advance()``). In a terminal each stage is a tqdm bar, redrawn in place. Anywhere
else — a pipe, a file, a CI log — a redrawn bar is hundreds of carriage-return frames, so a
stage writes one line when it ends ("the fleet, three arms: 216/216 tasks in 16.7 s"), a
line per named step it reports (``s.step("induce 0.4 s")``), and, once it has run for
``LONG_STAGE_S``, a line every ``EVERY_PERCENT`` so a long stage still shows it is alive.

tqdm rather than rich: it is already installed (usearch requires it), so the progress costs
no new dependency, and a bar is all these commands draw. It is imported only in a terminal.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from typing import TextIO

LONG_STAGE_S = 60.0  # in a log, a stage that has run this long also reports every EVERY_PERCENT
EVERY_PERCENT = 10


class Stage:
    """One stage of a long command. Use it as a context manager (``stage(...)``): leaving it
    ends the stage with its final line, carrying ``summary`` if the block set it (what the
    stage produced); a failure says where it stopped, then the exception goes on."""

    def __init__(self, name: str, total: int | None = None, unit: str = "", stream: TextIO | None = None,
                 interactive: bool | None = None, clock: Callable[[], float] = time.perf_counter):
        self.name, self.total, self.unit = name, total, unit
        self.stream = stream if stream is not None else sys.stderr
        self.interactive = is_terminal(self.stream) if interactive is None else interactive
        self.done, self.summary, self._clock, self._started = 0, "", clock, clock()
        self._next_percent = EVERY_PERCENT
        self._bar = self._open_bar() if self.interactive else None

    def advance(self, n: int = 1) -> None:
        """``n`` more units of work are done."""
        self.done += n
        if self._bar is not None:
            self._bar.update(n)
        elif self.total and self._clock() - self._started >= LONG_STAGE_S:
            percent = 100 * self.done // self.total
            if percent >= self._next_percent and self.done < self.total:
                self._write(f"{self.name}: {percent}% ({self._count()}, {self._elapsed():.0f} s)")
                self._next_percent = (percent // EVERY_PERCENT + 1) * EVERY_PERCENT

    def step(self, what: str) -> None:
        """A named step of the stage finished (e.g. a job's phase): one unit of work, and in a
        log its own line."""
        self.done += 1
        if self._bar is not None:
            self._bar.set_postfix_str(what, refresh=False)
            self._bar.update(1)
        else:
            self._write(f"{self.name}: {what}")

    def close(self, failed: bool = False) -> None:
        """End the stage: its final line, "<name>: <done>/<total> <unit> in <s> s[; <summary>]"."""
        if self.done or self.total:
            line = f"{self._count()} {'stopped after' if failed else 'in'} {self._elapsed():.1f} s"
        else:
            line = f"{'stopped after' if failed else 'done in'} {self._elapsed():.1f} s"
        if self.summary:
            line += f"; {self.summary}"
        if self._bar is None:
            self._write(f"{self.name}: {line}")
            return
        self._bar.set_postfix_str(self.summary, refresh=False)
        self._bar.close()  # the bar stays on screen with its final count
        if failed:
            self._write(f"{self.name}: {line}")

    def __enter__(self) -> Stage:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close(failed=exc_type is not None)

    def _open_bar(self):
        from tqdm import tqdm

        if self.total:
            shape = "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} {unit} [{elapsed}<{remaining}{postfix}]"
        else:  # nothing to count towards: what was done so far, if it is counted at all, and the time
            shape = "{desc}: {n_fmt} {unit} [{elapsed}{postfix}]" if self.unit else "{desc} [{elapsed}{postfix}]"
        return tqdm(total=self.total, desc=self.name, unit=self.unit or "steps", file=self.stream, leave=True,
                    dynamic_ncols=True, bar_format=shape)

    def _count(self) -> str:
        unit = f" {self.unit}" if self.unit else ""
        return f"{self.done}/{self.total}{unit}" if self.total else f"{self.done}{unit}"

    def _elapsed(self) -> float:
        return self._clock() - self._started

    def _write(self, line: str) -> None:
        self.stream.write(line + "\n")
        self.stream.flush()


def stage(name: str, total: int | None = None, unit: str = "", stream: TextIO | None = None) -> Stage:
    """A stage of a long command, written to ``stream`` (standard error by default): a live
    bar when it is a terminal, plain lines otherwise (see the module docstring)."""
    return Stage(name, total, unit, stream)


def is_terminal(stream: TextIO) -> bool:
    """Whether ``stream`` is a terminal a bar can redraw in place (``TERM=dumb`` is not)."""
    try:
        return stream.isatty() and os.environ.get("TERM") != "dumb"
    except (AttributeError, ValueError):  # a closed or file-like stream without a terminal
        return False
