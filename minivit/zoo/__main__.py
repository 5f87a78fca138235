"""`python -m minivit.zoo list | verify | train | add`: the zoo's command line (see `minivit.zoo`)."""

from __future__ import annotations

import argparse
import datetime
import json
import shutil
import sys
from pathlib import Path

from . import COPY_SHIFT, RECORDS, WEIGHTS, file_sha256, get_entry, records, verify
from .registry import ENTRIES, entries_of


def _list(as_json: bool) -> int:
    recs = records()
    rows = [{**e.to_dict(), "record": recs.get(name)}
            for name, e in sorted(ENTRIES.items(), key=lambda kv: (kv[1].run.name, kv[1].epoch))]
    if as_json:
        print(json.dumps(rows, indent=1))
        return 0
    for row in rows:
        rec, run = row["record"], row["run"]
        size = f"{run['dataset']} {run['image_size']} px"
        if rec is None:
            print(f"{row['name']:<28} {row['preset']:<11} {size:<15} not trained yet "
                  f"(python -m minivit.zoo train {row['name']})")
            continue
        t = rec["test"]
        where = rec["trained_on"]["gpu"] or f"{rec['trained_on']['cpu']}, {rec['trained_on']['threads']} thread(s)"
        print(f"{row['name']:<28} {row['preset']:<11} {size:<15} {t['accuracy']:.2%} ({t['correct']:,}/{t['n']:,}) "
              f"after {rec['epochs']} epochs, {rec['train_seconds'] / 60:.0f} min on {where}; "
              f"sha256 {rec['sha256'][:12]}…; used by {row['used_by']}")
    return 0


def _verify(names) -> int:
    try:
        results = verify(names)
    except (ValueError, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if not results:
        print("no committed zoo models to verify")
        return 1
    bad = [r["name"] for r in results if not r["ok"]]
    other = sum(r["copy"] == "other" for r in results)
    within = f"within {100 * COPY_SHIFT:.0f} points of their records' accuracy"
    print(f"{len(results) - len(bad)} of {len(results)} models measured as recorded"
          + (f" ({other} on another copy of the data: {within})" if other else "")
          + (f"; mismatched: {', '.join(bad)}" if bad else ""))
    return 1 if bad else 0


def _train(name: str, out: str | None, resume: str | None, device: str | None, progress: bool) -> int:
    from .training import train_run
    run = get_entry(name).run
    if resume:
        folder = Path(resume)
        if not (folder / "train-state.pt").exists():
            print(f"error: {folder} holds no interrupted run (train-state.pt)", file=sys.stderr)
            return 2
    else:
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        folder = Path(out) if out else Path("runs") / "zoo" / f"{run.name}-{stamp}"
        if folder.exists() and any(folder.iterdir()):
            print(f"error: {folder} is not empty; the zoo writes every run to a new folder", file=sys.stderr)
            return 2
    print(f"training zoo run {run.name!r} ({', '.join(e.name for e in entries_of(run))}) into {folder}")
    for rec in train_run(run, folder, resume=bool(resume), device=device, progress=progress):
        t = rec["test"]
        print(f"{rec['name']}: {t['accuracy']:.2%} ({t['correct']:,}/{t['n']:,}, {t['metric']}) after "
              f"{rec['epochs']} epochs, {rec['train_seconds']:.0f} s of training -> {folder / rec['file']}")
    print(f"to make these the committed models: python -m minivit.zoo add {folder}")
    return 0


def _add(folder: str, replace: bool) -> int:
    """Copy a finished run's files and records into the package (refusing to replace committed ones unasked)."""
    folder = Path(folder)
    found = sorted(folder.glob("*.json"))
    new = {}
    for p in found:
        if p.name == "history.json":
            continue
        rec = json.loads(p.read_text())
        get_entry(rec["name"])
        src = folder / rec["file"]
        if not src.exists() or file_sha256(src) != rec["sha256"]:
            print(f"error: {src} is missing or does not match its record; nothing was added", file=sys.stderr)
            return 2
        new[rec["name"]] = (src, rec)
    if not new:
        print(f"error: {folder} holds no zoo records (<name>.json beside <name>.safetensors)", file=sys.stderr)
        return 2
    recs = records()
    clash = [n for n in new if n in recs or (WEIGHTS / new[n][1]["file"]).exists()]
    if clash and not replace:
        print(f"error: {', '.join(clash)} already committed; pass --replace to replace them (nothing was changed)",
              file=sys.stderr)
        return 2
    WEIGHTS.mkdir(parents=True, exist_ok=True)
    for name, (src, rec) in new.items():
        shutil.copyfile(src, WEIGHTS / rec["file"])
        recs[name] = rec
    RECORDS.write_text(json.dumps(dict(sorted(recs.items())), indent=1) + "\n")
    print(f"added {', '.join(new)} to {WEIGHTS}; check them with python -m minivit.zoo verify {' '.join(new)}")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m minivit.zoo", description="The course's long-trained models.")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("list", help="every entry: model, data, recipe, measured accuracy, file hash")
    p.add_argument("--json", action="store_true", help="machine-readable, with every field")
    p = sub.add_parser("verify", help="re-measure committed models on their full test split; exit 1 on a mismatch")
    p.add_argument("names", nargs="*", metavar="NAME", help="entries to check (default: every committed one)")
    p = sub.add_parser("train", help="reproduce an entry's training run into a new folder (prints its accuracy)")
    p.add_argument("name", metavar="NAME", choices=sorted(ENTRIES), help="a zoo entry (its whole run is trained)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--out", help="a new (or empty) folder; default runs/zoo/<run>-<date-time>")
    g.add_argument("--resume", metavar="DIR", help="continue the interrupted classifier run in DIR")
    p.add_argument("--device", help="cpu, cuda, ... (default: the best available)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p = sub.add_parser("add", help="make a finished run's files the committed ones (python -m minivit.zoo train)")
    p.add_argument("folder", metavar="DIR")
    p.add_argument("--replace", action="store_true", help="replace committed files of the same entries")
    a = parser.parse_args(argv)
    if a.command == "list":
        return _list(a.json)
    if a.command == "verify":
        return _verify(a.names)
    if a.command == "train":
        return _train(a.name, a.out, a.resume, a.device, not a.no_progress)
    return _add(a.folder, a.replace)


if __name__ == "__main__":
    sys.exit(main())
