"""Our numbers as notebook output: a results table or a sentence rendered from the run's variables.

The notebooks' markdown explains, quotes the paper and says what a result means; it never re-types one of our
measurements, because every change of a run would leave such a sentence behind (the review rounds found dozens).
Where the text needs a number of ours -- "what the run shows", a "paper vs ours" table, a summary -- a code cell
renders it from the variables of the run that measured it:

    show(say(f"The CNN is right on {acc_cnn:.1%} of the test images, the ViT on {acc_vit:.1%}: "
             f"{verdict(z, 'the CNN is ahead', 'the ViT is ahead', 'the two are level')} (McNemar z {z:.1f})."))
    show(table([["ViT-Nano/4", f"{acc_vit:.1%}"], ["ResNet-14", f"{acc_cnn:.1%}"]], ["model", "test accuracy"]))

A `Report` is markdown: JupyterLab and the course site render it (a table as a table), and its plain-text form --
the same markdown -- is what a terminal prints and what nbval compares. `verdict` picks the words from the
statistic, so a sentence cannot say "ahead" when the run printed "level".

Introduced in 04_training_a_vit.ipynb.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

__all__ = ["Report", "say", "table", "verdict", "show"]


class Report:
    """A piece of markdown made from a run's numbers; displayed as markdown in a notebook, printed as its text."""

    def __init__(self, markdown: str):
        if not isinstance(markdown, str):
            raise TypeError(f"a Report holds markdown text, got {type(markdown).__name__}")
        self.markdown = markdown.strip()

    def _repr_markdown_(self) -> str:
        return self.markdown

    def __repr__(self) -> str:
        return self.markdown

    __str__ = __repr__

    def __add__(self, other: Report) -> Report:
        """Two reports, one after the other (separate paragraphs)."""
        if not isinstance(other, Report):
            return NotImplemented
        return Report(self.markdown + "\n\n" + other.markdown)


def say(*sentences: str) -> Report:
    """One paragraph from sentences (f-strings of the run's variables), joined by spaces."""
    if not sentences or not all(isinstance(s, str) and s.strip() for s in sentences):
        raise ValueError("say() needs one or more non-empty strings")
    return Report(" ".join(s.strip() for s in sentences))


def _cell(x) -> str:
    if isinstance(x, float):
        return "–" if math.isnan(x) else f"{x:.4g}"
    return "–" if x is None else str(x).replace("|", "\\|").replace("\n", " ")


def table(rows: Iterable[Sequence] | Iterable[dict], columns: Sequence[str] | None = None, *,
          caption: str | None = None) -> Report:
    """A markdown table. rows: sequences (then `columns` names them) or dicts (the columns default to the first
    row's keys). Format the numbers yourself (f"{acc:.1%}"); a bare float prints with 4 significant digits, None
    and NaN as "–". caption: a line above the table (say what was measured, on which images)."""
    rows = list(rows)
    if not rows:
        raise ValueError("table() needs at least one row")
    if isinstance(rows[0], dict):
        columns = list(columns or rows[0])
        body = [[r.get(c) for c in columns] for r in rows]
    else:
        body = [list(r) for r in rows]
        if columns is None:
            raise ValueError("rows given as sequences need `columns`, the column names")
        columns = list(columns)
    bad = [i for i, r in enumerate(body) if len(r) != len(columns)]
    if bad:
        raise ValueError(f"row {bad[0]} has {len(body[bad[0]])} cells, expected {len(columns)} ({columns})")
    lines = ["| " + " | ".join(_cell(c) for c in columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(_cell(c) for c in r) + " |" for r in body]
    return Report(((caption.strip() + "\n\n") if caption else "") + "\n".join(lines))


def verdict(z: float, above: str, below: str, level: str, *, bar: float = 2.0) -> str:
    """Words for a signed statistic (a McNemar z, a difference over its s.e.): `above` when z > bar, `below` when
    z < -bar, `level` otherwise. The default bar, 2, is about a two-sided 5% test."""
    if not bar > 0:
        raise ValueError(f"bar must be positive, got {bar}")
    z = float(z)
    if math.isnan(z):
        raise ValueError("verdict() got NaN: the statistic was not measured")
    return above if z > bar else below if z < -bar else level


def show(*reports: Report) -> None:
    """Display reports as markdown in a notebook (IPython), or print their text elsewhere."""
    for r in reports:
        if not isinstance(r, Report):
            raise TypeError(f"show() takes Reports (say(...), table(...)), got {type(r).__name__}")
    try:
        from IPython import get_ipython
        from IPython.display import display
        inside = get_ipython() is not None
    except ImportError:  # IPython is optional outside a notebook
        inside = False
    for r in reports:
        if inside:
            display(r)  # text/markdown (rendered) and text/plain (the same markdown, what nbval compares)
        else:
            print(r.markdown)
