"""What an answer writes to stderr, and its warnings, shown on stdout: nbgrader scores a test cell 0 when anything
reaches stderr, so a correct answer with a `tqdm` bar, a warning (PyTorch's `torch.meshgrid` without `indexing=`) or
a `print(..., file=sys.stderr)` would lose its points.

    with stderr_on_stdout() as captured:
        answer(x)
    captured.lines(), captured.warnings      # what it caught; already printed on stdout, prefixed

`stderr_on_stdout()` runs a block with stderr captured -- Python's `sys.stderr` (tqdm's bars, `logging`'s last-resort
handler), file descriptor 2 (what C code writes) -- and warnings recorded, then prints what it caught on stdout, each
line prefixed "the answer wrote to stderr: " or "the answer warned: ". `minivit.grading`'s `guarded` answers and
every case its checks run go through it (issue 38: the hunt's R1 and R3); `minivit.grading` re-exports both names.
Used by the nbgrader kit in `assignments/` and the exercises of 00_start_here.ipynb.
"""

from __future__ import annotations

import io
import os
import sys
import tempfile
import warnings
from contextlib import contextmanager, redirect_stderr
from dataclasses import dataclass, field

__all__ = ["Captured", "stderr_on_stdout"]


_SHOWN_LINES = 20  # at most this many lines of stderr (and as many warnings) are shown for one block


@dataclass
class Captured:
    """What a block run under `stderr_on_stdout` wrote to stderr, filled in when the block ends."""

    text: str = ""  # what reached stderr, Python's sys.stderr then file descriptor 2, as written
    warnings: list[str] = field(default_factory=list)  # "Category: message (file:line)", one per warning raised

    def lines(self) -> list[str]:
        """`text` as a terminal would show it: of each line rewritten with carriage returns (a progress bar) its
        last state, empty lines left out."""
        shown = []
        for line in self.text.split("\n"):  # not splitlines(), which also splits at the carriage returns
            states = [s for s in line.split("\r") if s.strip()]
            if states:
                shown.append(states[-1].rstrip())
        return shown


class _Fd2:
    """File descriptor 2 sent to a temporary file, for what C code writes there; `None` from `start` where fd 2
    cannot be duplicated (no stderr at all)."""

    def __init__(self, saved: int, file):
        self.saved, self.file = saved, file

    @classmethod
    def start(cls) -> "_Fd2 | None":
        _flush(sys.__stderr__)  # what was written before the block is not the block's
        try:
            saved = os.dup(2)
        except OSError:
            return None
        file = tempfile.TemporaryFile()
        try:
            os.dup2(file.fileno(), 2)
        except OSError:
            os.close(saved)
            file.close()
            return None
        return cls(saved, file)

    def stop(self) -> str:
        _flush(sys.__stderr__)  # Python's own stderr writes to fd 2 through a buffer
        os.dup2(self.saved, 2)
        os.close(self.saved)
        self.file.seek(0)
        text = self.file.read().decode("utf-8", errors="replace")
        self.file.close()
        return text


def _flush(stream) -> None:
    try:
        if stream is not None:
            stream.flush()
    except (OSError, ValueError):  # closed or detached: nothing to flush
        pass


def _warning_line(w: warnings.WarningMessage) -> str:
    return f"{w.category.__name__}: {w.message} ({os.path.basename(str(w.filename))}:{w.lineno})"


def _show(captured: Captured) -> None:
    """Print what `captured` holds on stdout, prefixed, at most `_SHOWN_LINES` lines of each kind."""
    out = []
    for prefix, lines in (("the answer wrote to stderr: ", captured.lines()),
                          ("the answer warned: ", list(dict.fromkeys(captured.warnings)))):  # repeats shown once
        out += [prefix + line for line in lines[:_SHOWN_LINES]]
        if len(lines) > _SHOWN_LINES:
            out.append(f"{prefix}... and {len(lines) - _SHOWN_LINES} more")
    if out:
        print("\n".join(out), file=sys.stdout, flush=True)


@contextmanager
def stderr_on_stdout():
    """Run the block with stderr captured and warnings recorded, then print what was caught on stdout (see the
    module docstring): nbgrader scores a test cell 0 when anything reaches stderr, so an answer's progress bar or
    warning would cost a correct answer its points. Captured: Python's `sys.stderr` (so tqdm's bars, `print(...,
    file=sys.stderr)`, `logging` without handlers of its own), file descriptor 2 (C code's writes; skipped where
    there is none), and every warning that the warning filters in force would show (those they ignore stay
    ignored, those they turn into errors are raised). Yields a `Captured`, filled in when the block ends -- on an
    exception too, which then goes on as it was. Blocks may be nested: the inner one shows what it caught."""
    captured, buffer = Captured(), io.StringIO()
    fd2 = _Fd2.start()
    records: list[warnings.WarningMessage] = []
    try:
        with warnings.catch_warnings(record=True) as records, redirect_stderr(buffer):  # the filters kept as they are
            yield captured
    finally:
        captured.text = buffer.getvalue() + (fd2.stop() if fd2 is not None else "")
        captured.warnings = [_warning_line(w) for w in records]
        _show(captured)
