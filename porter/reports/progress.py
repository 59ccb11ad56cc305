"""The progress bar of a batch run (rich, on stderr, only when asked or on a terminal) and
printing around it. Text that cannot be encoded (a file name that is not UTF-8) is printed with
the undecodable bytes escaped (``\\xff``), never as a traceback."""

from __future__ import annotations

import sys

import click

from porter.engine.results import Failure, FileResult, Success


def printable(text: str) -> str:
    """``text`` with the bytes of a non-UTF-8 file name (surrogate escapes) shown as ``\\xNN``."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        try:
            return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        except UnicodeEncodeError:  # a lone surrogate that is no escaped byte
            return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


class Progress:
    """A rich progress bar on a terminal (stderr); nothing otherwise. Output goes around it."""

    def __init__(self, bar: object | None) -> None:
        self.bar = bar
        self.task: object | None = None
        self.changed = self.failed = 0

    @classmethod
    def create(cls, wanted: object, quiet: bool) -> Progress:
        show = sys.stderr.isatty() if wanted is None else bool(wanted)
        if not show:
            return cls(None)
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

        bar = Progress(
            TextColumn("porting"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[changed]} changed, {task.fields[failed]} failed"),
            TextColumn("{task.fields[rate]} files/s"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            TextColumn("{task.fields[current]}"),
            console=Console(file=sys.stderr),
            transient=True,
            redirect_stdout=False,
            redirect_stderr=False,
        )
        return cls(bar)

    def start(self, total: int) -> None:
        if self.bar is None:
            return
        import time

        self.started = time.perf_counter()
        self.bar.start()  # type: ignore[attr-defined]
        self.task = self.bar.add_task("port", total=total, changed=0, failed=0, rate="-", current="")  # type: ignore[attr-defined]

    def advance(self, result: FileResult, current: str = "") -> None:
        """One more file done (``current``: its name, shown at the end of the bar)."""
        if self.bar is None or self.task is None:
            return
        import time

        self.changed += isinstance(result, Success)
        self.failed += isinstance(result, Failure)
        done = self.bar.tasks[0].completed + 1  # type: ignore[attr-defined]
        rate = done / max(time.perf_counter() - self.started, 1e-6)
        self.bar.update(self.task, advance=1, changed=self.changed, failed=self.failed, rate=f"{rate:.1f}" if rate < 10 else f"{rate:.0f}", current=_short(current))  # type: ignore[attr-defined]

    def echo(self, text: str, nl: bool = True, err: bool = False, color: bool | None = None) -> None:
        text = printable(text)
        stream = sys.stderr if err else sys.stdout
        if self.bar is None or not stream.isatty():
            click.echo(text, nl=nl, err=err, color=color)
            return
        # Same terminal as the bar: print through rich, which keeps the bar below the text.
        from rich.text import Text

        body = text[:-1] if not nl and text.endswith("\n") else text
        self.bar.console.print(Text.from_ansi(body), soft_wrap=True)  # type: ignore[attr-defined]

    def stop(self) -> None:
        if self.bar is not None and self.task is not None:
            self.bar.stop()  # type: ignore[attr-defined]


def _short(name: str, width: int = 40) -> str:
    """A file name that fits the bar: its tail, ``...`` in front when cut."""
    name = printable(name)
    return name if len(name) <= width else "..." + name[-(width - 3) :]
