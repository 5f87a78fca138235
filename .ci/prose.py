"""The course's prose rules, checked on the notebooks' markdown cells and on README.md (tests/test_prose.py).

1. No number of ours typed into prose. A decimal number (0.5, 76.51) or a percentage (3%, 82.5 %) in markdown must be
   a quotation of the paper ("..." or a `>` block quote) or one of the paper's numbers listed, with its source, in
   docs/paper-numbers.md. Our measurements are printed by code from the run (`minivit.report`).
   Not numbers of this kind: section, equation, figure, table and appendix references (§4.5, Fig. 7, App. B.1.2),
   arXiv identifiers and versions (Python 3.12), URLs and link targets, code blocks, and inline code that is code
   (it holds `=`, `(`, `[` or `_`, e.g. `warmup_epochs=0.5`). README.md's blocks between
   `<!-- generated: ... -->` and `<!-- end generated -->` are written by a script from the committed records.
2. Every heading starts a markdown cell of its own: a heading in the middle of a cell is lost by JupyterLab's outline
   and the site's table of contents.
3. The main line is short: words outside `<details>` blocks (the folded caveats, derivations and history) are counted
   per notebook; tests/test_prose.py caps every notebook at MAIN_LINE_WORDS (one sitting), and 04-09 at about half
   of what they were before the round-4 rewrite.

    python .ci/prose.py                      # every notebook and README: violations and main-line words
    python .ci/prose.py notebooks/04_training_a_vit.ipynb
    python .ci/prose.py --add 98.13 "Table 5: ViT-B/16, ImageNet-21k pre-trained, fine-tuned on CIFAR-10" 04
"""

from __future__ import annotations

import fcntl
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAIN_LINE_WORDS = 2000  # rule 3: the most words a notebook's main line may have
PAPER_NUMBERS = ROOT / "docs" / "paper-numbers.md"

NUMBER = re.compile(r"(?<![\w.,])(\d[\d,]*\.\d+(?:\s?%)?|\d[\d,]*\s?%)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
INLINE_CODE = re.compile(r"`[^`\n]+`")
URL = re.compile(r"https?://\S+|\]\([^)]*\)")
QUOTE = re.compile(r"\"[^\"\n]*(?:\n[^\"\n]*){0,8}\"|“[^”]*”")
BLOCKQUOTE = re.compile(r"^\s*>.*$", re.M)
REFERENCE = re.compile(r"(?:§\s?|\b(?:Sections?|Sec\.|Appendix|Appendices|App\.|Eqs?\.|Equations?|Figs?\.|Figures?"
                       r"|Tables?|footnotes?|arXiv:?|Python|PyTorch|torch|torchvision|CUDA|versions?|v)\s?)"
                       r"[A-Z]?\d+(?:\.\d+)*(?:\s?(?:,|and|–|-)\s?(?:§\s?)?[A-Z]?\d+(?:\.\d+)*)*")
GENERATED = re.compile(r"<!-- generated:.*?<!-- end generated -->", re.S)
DETAILS = re.compile(r"<details\b.*?</details>", re.S)
HEADING = re.compile(r"^#{1,6}\s")


def paper_numbers() -> dict[str, str]:
    """The reviewed list: number (as written, without %) -> its source in the paper."""
    out = {}
    for line in PAPER_NUMBERS.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) >= 2 and re.fullmatch(r"[\d,]*\.?\d+%?", cells[0]):
            out[cells[0].rstrip("%")] = cells[1]
    return out


def _prose(text: str) -> str:
    """The text a number rule applies to: code, quotations, links and references blanked out."""
    text = FENCE.sub(" ", text)
    text = INLINE_CODE.sub(lambda m: " " if re.search(r"[=(\[_]", m.group()) else m.group(), text)
    for pattern in (URL, BLOCKQUOTE, QUOTE, REFERENCE):
        text = pattern.sub(" ", text)
    return text


def typed_numbers(text: str, allowed: dict[str, str] | None = None) -> list[str]:
    """The numbers of `text` that break rule 1."""
    allowed = paper_numbers() if allowed is None else allowed
    found = []
    for m in NUMBER.finditer(_prose(text)):
        n = m.group().replace(" ", "").rstrip("%")
        if n not in allowed:
            found.append(m.group())
    return found


def misplaced_headings(text: str) -> list[str]:
    """Headings that do not open their cell (rule 2)."""
    lines = [ln for ln in FENCE.sub("", text).splitlines()]
    first = next((i for i, ln in enumerate(lines) if ln.strip()), None)
    return [ln for i, ln in enumerate(lines) if HEADING.match(ln) and i != first]


def words(text: str, main_line: bool = True) -> int:
    """Words of markdown; with main_line, those outside <details> blocks (rule 3)."""
    return len(re.findall(r"\S+", DETAILS.sub(" ", text) if main_line else text))


def markdown_cells(path: Path) -> list[tuple[int, str]]:
    nb = json.loads(Path(path).read_text())
    return [(i, "".join(c["source"])) for i, c in enumerate(nb["cells"]) if c["cell_type"] == "markdown"]


def check_notebook(path: Path, allowed=None) -> dict:
    allowed = paper_numbers() if allowed is None else allowed
    numbers, headings, n_main, n_all = [], [], 0, 0
    for i, text in markdown_cells(path):
        numbers += [(i, n) for n in typed_numbers(text, allowed)]
        headings += [(i, h) for h in misplaced_headings(text)]
        n_main, n_all = n_main + words(text), n_all + words(text, main_line=False)
    return {"numbers": numbers, "headings": headings, "main_words": n_main, "all_words": n_all}


def check_readme(path: Path = ROOT / "README.md", allowed=None) -> list[str]:
    return typed_numbers(GENERATED.sub(" ", Path(path).read_text()), allowed)


def add_number(number: str, source: str, notebooks: str) -> None:
    """Append a row to docs/paper-numbers.md (under a lock: several editors may add at once)."""
    if not re.fullmatch(r"[\d,]*\.?\d+%?", number):
        raise SystemExit(f"expected a number such as 98.13 or 3%, got {number!r}")
    with open(PAPER_NUMBERS, "r+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        text = f.read()
        if re.search(rf"^\| {re.escape(number)} \|", text, re.M):
            print(f"{number} is listed already")
            return
        f.write(("" if text.endswith("\n") else "\n") + f"| {number} | {source} | {notebooks} |\n")
    print(f"added {number}: {source} ({notebooks})")


def main(argv: list[str]) -> int:
    if argv[:1] == ["--add"]:
        if len(argv) != 4:
            raise SystemExit("usage: python .ci/prose.py --add NUMBER 'SOURCE IN THE PAPER' NOTEBOOKS")
        add_number(*argv[1:])
        return 0
    paths = [Path(p) for p in argv] or sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")) + [ROOT / "README.md"]
    bad = 0
    for p in paths:
        if p.suffix == ".md":
            found = check_readme(p)
            print(f"{p.name}: {len(found)} typed numbers {found}")
            bad += len(found)
            continue
        r = check_notebook(p)
        print(f"{p.name}: main line {r['main_words']} words ({r['all_words']} with the folded blocks); "
              f"{len(r['numbers'])} typed numbers, {len(r['headings'])} misplaced headings")
        for i, n in r["numbers"]:
            print(f"  cell {i}: typed number {n!r}")
        for i, h in r["headings"]:
            print(f"  cell {i}: heading not at the top of its cell: {h!r}")
        bad += len(r["numbers"]) + len(r["headings"])
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
