"""How far a change of the data's copy moves the zoo's models: the measurement behind `minivit.zoo.COPY_SHIFT`.

    python benchmarks/other_copy.py /tmp/other-q90                    # another copy (see that script)
    python benchmarks/other_copy.py /tmp/other-q50 --quality 50       # one further from the course's
    python benchmarks/zoo_other_copy.py /tmp/other-q90 /tmp/other-q50  # -> benchmarks/results/zoo_other_copy.json

Every committed zoo model is measured on the whole test split of each copy exactly as `minivit.zoo.verify` measures
it (on the CPU, in batches of `EVAL_BATCH`), and set beside its record (made on the course's copy). The copies hold
other pixels and another order, so images cannot be paired across them: what is compared is the accuracy. Each
row also gives the test-image standard error of that accuracy, sqrt(p (1 - p) / n), for scale.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results_io import save_result  # noqa: E402


def measure_copy(root: Path) -> list[dict]:
    """Every zoo model measured on the copy in data root `root`."""
    os.environ["MINIVIT_DATA"] = str(root)  # minivit.data reads it at each load
    from minivit import zoo
    from minivit.data import copy_info
    from minivit.zoo import training
    rows, tests = [], {}
    for name in sorted(zoo.records()):
        entry, rec = zoo.get_entry(name), zoo.record(name)
        key = (entry.run.dataset, entry.run.image_size, entry.run.train_images == "mosaics")
        if key not in tests:
            tests[key] = training._data(entry.run, "test")
        m, t = zoo.measure(entry, zoo.load(name), tests[key]), rec["test"]
        shift = m["accuracy"] - t["accuracy"]
        se = math.sqrt(t["accuracy"] * (1 - t["accuracy"]) / t["n"])
        rows.append({"name": name, "dataset": entry.run.dataset, "n": m["n"], "recorded": t["accuracy"],
                     "measured": m["accuracy"], "shift": shift, "test_image_se": se,
                     "copy": copy_info(entry.run.dataset, "test")})
        print(f"{name:28s} {t['accuracy']:.4f} -> {m['accuracy']:.4f}  shift {100 * shift:+.2f} points "
              f"(s.e. of one accuracy {100 * se:.2f})")
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python benchmarks/zoo_other_copy.py", description=__doc__.split("\n\n")[0])
    p.add_argument("roots", nargs="+", type=Path, help="data roots holding other copies (benchmarks/other_copy.py)")
    a = p.parse_args(argv)
    for r in a.roots:
        if not (r / "OTHER_COPY.txt").exists():
            p.exit(2, f"zoo_other_copy: error: {r} is not a copy built by benchmarks/other_copy.py\n")
    from minivit.zoo.training import machine
    copies = []
    for r in a.roots:
        print(f"== {r}: {(r / 'OTHER_COPY.txt').read_text().strip()}")
        copies.append({"root": str(r), "what": (r / "OTHER_COPY.txt").read_text().strip(), "models": measure_copy(r)})
    worst = max(abs(m["shift"]) for c in copies for m in c["models"])
    print(f"largest shift of any model on any copy: {100 * worst:.2f} points")
    save_result("zoo_other_copy", {"benchmark": "zoo models on other copies of the data", "machine": machine(),
                                   "copies": copies, "largest_shift": worst})
    return 0


if __name__ == "__main__":
    sys.exit(main())
