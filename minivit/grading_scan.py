"""A scan of the submissions before grading: the constructs in each student's answers that an instructor should read.

    python -m minivit.autograde scan a_patches_and_attention --kit "$HOME/minivit-kit"

lists, per student, notebook, cell and line, the constructs of the answer cells that the kit's checks cannot fully
stop in a shared kernel (docs/instructors.md): reaching the kernel (`get_ipython`, input transformers, magics),
functions' insides (`__code__`, `__globals__`, `__defaults__`, `__closure__`, `__dict__`), other copies of code
(`importlib`, `sys.modules`, `exec`, `eval`, `compile`, `inspect.getsource`, `types.FunctionType`), assignments
to attributes of `torch`, `minivit`, `F` or another module the locked cells import, rebinding the names the locked
cells define (`guarded = ...`, `check_cases = ...`), tensor subclasses and PyTorch modes, other processes
(`subprocess`, `os.system`, `os.fork`, `multiprocessing`, `threading`), `sqlite3`, `ctypes`, `gc`, paths outside the
submission (absolute, or with `..`), and grading's own record (`_ORIGINAL`). `python -m minivit.autograde NAME`
prints the same report before it grades.

Only the answer cells are read: those nbgrader marks `solution` and those a student added (no nbgrader metadata).
The locked cells, which nbgrader puts back from the source when it grades, are not. Each cell is parsed (after
IPython's own transformation, so a magic reads as the `get_ipython()` call it is), or read line by line where it
does not parse. A reading aid, not proof: a flagged line may be honest, and code can hide what it does from any
scan (a name built from strings, a file it writes and imports).
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from pathlib import Path

# Names and attributes worth reading wherever they appear, with what they reach.
NAMES = {
    "get_ipython": "the kernel (get_ipython)", "input_transformers_cleanup": "the kernel's input transformers",
    "input_transformers_post": "the kernel's input transformers", "input_transformer_manager":
    "the kernel's input transformers", "ast_transformers": "the kernel's AST transformers",
    "transform_cell": "the kernel's cell transformation", "set_custom_exc": "the kernel's error handling",
    "clear_output": "a cell's output cleared", "__code__": "a function's code (__code__)",
    "__globals__": "a function's globals (__globals__)", "__defaults__": "a function's defaults (__defaults__)",
    "__kwdefaults__": "a function's defaults (__kwdefaults__)", "__closure__": "a function's closure (__closure__)",
    "__dict__": "a module's or class's namespace (__dict__)", "__builtins__": "the builtins (__builtins__)",
    "__import__": "an import by name (__import__)", "importlib": "modules loaded by name (importlib)",
    "exec": "code run from text (exec)", "eval": "code run from text (eval)", "compile": "code compiled (compile)",
    "getsource": "the package's source (inspect.getsource)", "getsourcelines": "the package's source (inspect)",
    "FunctionType": "a function made from a code object", "CodeType": "a code object made by hand",
    "as_subclass": "a tensor subclass (as_subclass)", "__torch_function__": "PyTorch's dispatch (__torch_function__)",
    "__torch_dispatch__": "PyTorch's dispatch (__torch_dispatch__)", "TorchFunctionMode": "a PyTorch mode",
    "TorchDispatchMode": "a PyTorch mode", "_ORIGINAL": "grading's record (_ORIGINAL)",
    "_minivit_grading_record": "grading's record", "_minivit_keeper": "the grading kernel's keeper",
    "grading_kernel": "the grading kernel's keeper", "globals": "the notebook's namespace (globals)",
    "setattr": "an attribute set by name (setattr)", "delattr": "an attribute removed by name (delattr)",
    "subprocess": "another process (subprocess)", "multiprocessing": "another process (multiprocessing)",
    "threading": "a thread (threading)", "sqlite3": "a database (sqlite3: the gradebook?)",
    "ctypes": "C memory (ctypes)", "gc": "every object (gc)", "setprofile": "the profile hook (sys.setprofile)",
    "settrace": "the trace hook (sys.settrace)", "_getframe": "the callers' frames (sys._getframe)",
}
# Builtins, flagged by name only (`model.eval()`, `re.compile` and `torch.compile` are not these).
BUILTINS = {"exec", "eval", "compile", "globals", "setattr", "delattr", "__import__"}
# Attributes of a module, read as `module.attr` (so `os.path` stays unflagged).
MODULE_ATTRIBUTES = {("sys", "modules"): "modules by name (sys.modules)", ("os", "system"): "a shell (os.system)",
                     ("os", "popen"): "a shell (os.popen)", ("os", "fork"): "another process (os.fork)",
                     ("os", "setsid"): "a detached process (os.setsid)", ("os", "kill"): "a signal (os.kill)"}
OS_PREFIXES = ("exec", "spawn", "posix_spawn")  # os.execv, os.spawnl, ...
MODULES = {"torch", "minivit", "F", "nn", "np", "numpy", "scipy", "einops", "timm", "math"}  # and the locked cells'
CHECK_NAME = re.compile(r"^(check_\w+|guarded|graded_with|close|_compare|_run|_call|without|tampered|Shortcut|"
                        r"CheckResult)$")
PATH = re.compile(r"^(/[\w.]|~/)|(^|[/\\])\.\.([/\\]|$)")  # an absolute path, or one going up


@dataclass(frozen=True)
class Finding:
    cell: int  # the cell's index in the notebook
    where: str  # "answer patchify" or "added cell"
    line: int  # in the cell, from 1
    what: str
    text: str  # the line, shortened


def answer_cells(notebook: dict) -> list[tuple[int, str, str]]:
    """(index, label, source) of the code cells to read: nbgrader's solution cells and cells with no nbgrader
    metadata (added by the student, or stripped of it)."""
    cells = []
    for i, cell in enumerate(notebook.get("cells", [])):
        if cell.get("cell_type") != "code":
            continue
        meta = cell.get("metadata", {}).get("nbgrader")
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else str(source)
        if not meta:
            cells.append((i, "added cell", source))
        elif meta.get("solution"):
            cells.append((i, f"answer {meta.get('grade_id', '?')}", source))
    return cells


def locked_names(notebook: dict) -> tuple[set[str], set[str]]:
    """(names, modules) the locked cells bind with an import, a def or a class: what the test cells rely on."""
    names, modules = set(), set()
    for cell in notebook.get("cells", []):
        meta = cell.get("metadata", {}).get("nbgrader") or {}
        if cell.get("cell_type") != "code" or not meta or meta.get("solution"):
            continue
        try:
            tree = ast.parse(_python("".join(cell.get("source", ""))))
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias in node.names:
                    bound = alias.asname or alias.name.split(".")[0]
                    names.add(bound)
                    if isinstance(node, ast.Import) or alias.name.islower() and not CHECK_NAME.match(bound):
                        modules.add(bound)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
    return names, modules


def _python(source: str) -> str:
    """The cell as IPython runs it (a magic becomes a get_ipython() call), or as it is without IPython."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager  # noqa: PLC0415
    except ImportError:
        return source
    try:
        return TransformerManager().transform_cell(source)
    except Exception:  # noqa: BLE001 (a cell IPython cannot transform is read as it is)
        return source


def _root(node) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.value if not isinstance(node, ast.Call) else node.func
    return node.id if isinstance(node, ast.Name) else None


def scan_source(source: str, names: set[str] = frozenset(), modules: set[str] = frozenset()) -> list[tuple[int, str]]:
    """(line, what) for each construct to read in one cell's source; `names` and `modules`: what the locked cells
    bind (see `locked_names`)."""
    text = _python(source)
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return _scan_text(text)
    found, modules = [], set(modules) | MODULES
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Name) and node.id in NAMES:
            found.append((line, NAMES[node.id]))
        elif isinstance(node, ast.Attribute):
            if node.attr in NAMES and node.attr not in BUILTINS:
                found.append((line, NAMES[node.attr]))
            root = node.value.id if isinstance(node.value, ast.Name) else None
            if (root, node.attr) in MODULE_ATTRIBUTES:
                found.append((line, MODULE_ATTRIBUTES[root, node.attr]))
            elif root == "os" and node.attr.startswith(OS_PREFIXES):
                found.append((line, f"another program (os.{node.attr})"))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                top = (getattr(node, "module", None) or alias.name).split(".")[0]
                for name in {top, alias.name.split(".")[-1]} & (set(NAMES) - BUILTINS):
                    found.append((line, NAMES[name]))
                bound = alias.asname or alias.name.split(".")[0]
                if CHECK_NAME.match(bound) and getattr(node, "module", None) not in ("minivit.grading",
                                                                                     "minivit.exercises"):
                    found.append((line, f"the locked cells' name `{bound}` rebound"))
        elif isinstance(node, ast.ClassDef):
            bases = [ast.unparse(b) for b in node.bases]
            if any(b.endswith(("Tensor", "Parameter")) for b in bases):
                found.append((line, f"a tensor subclass ({node.name})"))
            if node.name in names or CHECK_NAME.match(node.name):
                found.append((line, f"the locked cells' name `{node.name}` rebound"))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node in tree.body and \
                (node.name in names or CHECK_NAME.match(node.name)):
            found.append((line, f"the locked cells' name `{node.name}` rebound"))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and PATH.search(node.value):
            found.append((line, f"a path outside the submission ({node.value[:40]!r})"))
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            for target in [t for tgt in targets for t in (tgt.elts if isinstance(tgt, ast.Tuple) else [tgt])]:
                if isinstance(target, ast.Name) and (target.id in names or CHECK_NAME.match(target.id)):
                    found.append((line, f"the locked cells' name `{target.id}` rebound"))
                elif isinstance(target, (ast.Attribute, ast.Subscript)) and _root(target) in modules:
                    found.append((line, f"an attribute of a module changed ({ast.unparse(target)[:40]})"))
    return sorted(set(found))


def _scan_text(text: str) -> list[tuple[int, str]]:
    """The same, line by line, for a cell that does not parse: the names as words, assignments to modules."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        for name, what in NAMES.items():
            attribute = "" if name in BUILTINS else rf"|\.{re.escape(name)}\b"
            if re.search(rf"(?<![\w.]){re.escape(name)}\b{attribute}", line):
                found.append((number, what))
        for (module, attr), what in MODULE_ATTRIBUTES.items():
            if re.search(rf"(?<![\w.]){module}\.{attr}\b", line):
                found.append((number, what))
        if re.search(rf"(?<![\w.])os\.(({'|'.join(OS_PREFIXES)})\w*)", line):
            found.append((number, "another program (os.exec, os.spawn)"))
        if re.match(rf"\s*({'|'.join(MODULES)})\.[\w.]+\s*=[^=]", line) or re.match(r"\s*[%!]", line):
            found.append((number, "an attribute of a module changed, or a magic"))
    return sorted(set(found))


def scan_notebook(path: Path, names: set[str] = frozenset(), modules: set[str] = frozenset()) -> list[Finding]:
    """The findings of one submitted notebook (a notebook that does not load is itself a finding)."""
    try:
        notebook = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        return [Finding(-1, "the notebook", 0, f"not readable as a notebook ({type(error).__name__})", "")]
    findings = []
    for index, where, source in answer_cells(notebook):
        lines = source.splitlines()
        for line, what in scan_source(source, names, modules):
            shown = lines[line - 1].strip() if 0 < line <= len(lines) else ""
            findings.append(Finding(index, where, line, what, shown[:90]))
    return findings


def scan(kit: Path, name: str) -> dict[str, dict[str, list[Finding]]]:
    """student -> notebook file -> findings, for every submission of `name` in the course folder `kit`; the names
    the locked cells bind come from the source notebooks."""
    kit = Path(kit)
    names, modules = set(), set()
    for source in sorted((kit / "source" / name).glob("*.ipynb")):
        n, m = locked_names(json.loads(source.read_text(encoding="utf-8")))
        names |= n
        modules |= m
    results = {}
    for folder in sorted(p for p in (kit / "submitted").glob(f"*/{name}") if p.is_dir()):
        notebooks = [nb for nb in sorted(folder.rglob("*.ipynb")) if ".ipynb_checkpoints" not in nb.parts]
        results[folder.parent.name] = {str(nb.relative_to(folder)): scan_notebook(nb, names, modules)
                                       for nb in notebooks}
    return results


def report(name: str, results: dict[str, dict[str, list[Finding]]]) -> str:
    """The scan as text: one block per student with something to read, then the students with nothing."""
    flagged = {s: nbs for s, nbs in results.items() if any(nbs.values())}
    out = [f"scan of {name}: {len(results)} submissions, {len(flagged)} with constructs to read in their answers "
           f"(a reading aid, not proof: read each line)"]
    for student, notebooks in flagged.items():
        out.append(f"{student}:")
        for notebook, findings in notebooks.items():
            for f in findings:
                out.append(f"  {notebook} cell {f.cell} ({f.where}), line {f.line}: {f.what}" +
                           (f"  | {f.text}" if f.text else ""))
    clean = sorted(set(results) - set(flagged))
    if clean:
        out.append(f"nothing flagged: {', '.join(clean)}")
    return "\n".join(out)


def main(argv: list[str]) -> int:
    """`python -m minivit.autograde scan NAME --kit DIR`: print the report; 2, saying why, for a wrong name."""
    import argparse  # noqa: PLC0415
    import sys  # noqa: PLC0415

    parser = argparse.ArgumentParser(prog="python -m minivit.autograde scan",
                                     description="the constructs to read in each submission's answers, before grading")
    parser.add_argument("assignment", help="the assignment's name (a folder of the kit's source/)")
    parser.add_argument("--kit", default="assignments", help="the nbgrader course folder (default: assignments)")
    args = parser.parse_args(argv)
    kit = Path(args.kit).expanduser().resolve()
    names = sorted(p.name for p in (kit / "source").iterdir() if p.is_dir()) if (kit / "source").is_dir() else []
    if args.assignment not in names:
        print(f"minivit.autograde scan: no assignment {args.assignment!r} in {kit / 'source'}: expected one of "
              f"{', '.join(names) or 'the folders of an nbgrader course folder source/'}", file=sys.stderr)
        return 2
    print(report(args.assignment, scan(kit, args.assignment)))
    return 0
