"""Build the course site from scratch: `python docs/build.py [OUT]` (default `_site`), tooling for `make site`.

Writes OUT/html (the site: open OUT/html/index.html, or publish that folder) and OUT/doctrees (Sphinx's cache),
after removing both and the generated API stubs (docs/_autosummary), so that every warning of every page is seen
again: Sphinx runs with warnings as errors (-W), and this exits non-zero on the first build that has any.
The notebooks are rendered from their committed outputs (docs/conf.py: nb_execution_mode = "off").
"""

import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def build(out: Path) -> int:
    """Build into `out` (html/ and doctrees/); return sphinx-build's exit status."""
    for stale in (out / "html", out / "doctrees", ROOT / "docs" / "_autosummary"):
        shutil.rmtree(stale, ignore_errors=True)
    return subprocess.call([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
                            "-c", str(ROOT / "docs"), "-d", str(out / "doctrees"), str(ROOT), str(out / "html")])


def main(argv: list[str]) -> int:
    if len(argv) > 1:
        print("usage: python docs/build.py [OUT]  (default _site)", file=sys.stderr)
        return 2
    out = Path(argv[0] if argv else ROOT / "_site").resolve()
    start = time.perf_counter()
    status = build(out)
    if status == 0:
        print(f"the site is in {out / 'html'} (built in {time.perf_counter() - start:.0f} s): open index.html")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
