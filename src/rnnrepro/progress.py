"""Progress of a long loop: a tqdm bar on a terminal, plain lines in a log file.

A job's output goes to its log under ``results/logs/``; tqdm's carriage returns would make that
one endless line. Off a terminal, ``Progress`` prints a line every ``interval`` seconds instead.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Iterator

from tqdm import tqdm


class Progress:
    """Counts ``update(n)`` calls; a line ``<desc>: <n> <units>, <s> s`` every ``interval``
    seconds (and a last one at the end). Used as a context manager, like tqdm."""

    def __init__(self, desc: str, units: str = "items", interval: float = 30.0):
        self.desc, self.units, self.interval = desc, units, interval
        self.n = 0
        self.started = self.last = time.perf_counter()

    def update(self, n: int = 1) -> None:
        self.n += n
        now = time.perf_counter()
        if now - self.last >= self.interval:
            self.last = now
            self._line(now)

    def _line(self, now: float) -> None:
        print(f"{self.desc}: {self.n} {self.units}, {now - self.started:.0f} s", flush=True)

    def close(self) -> None:
        if self.n and self.last != self.started:  # only after at least one interval line
            self._line(time.perf_counter())

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def progress(desc: str, units: str = "items", interval: float = 30.0, **kwargs) -> tqdm | Progress:
    """A tqdm bar when standard error is a terminal, else ``Progress`` (lines)."""
    if sys.stderr.isatty():
        return tqdm(desc=desc, unit=f" {units}", mininterval=interval, **kwargs)
    return Progress(desc, units, interval)


def iterate(
    iterable: Iterable, desc: str, units: str = "items", interval: float = 30.0
) -> Iterator:
    """The items of ``iterable``, with ``progress`` (a transient bar on a terminal)."""
    with progress(desc, units, interval, leave=False) as bar:
        for item in iterable:
            yield item
            bar.update()
