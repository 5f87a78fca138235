"""A static lint of the notebooks' compared outputs: nothing that nbval compares may depend on the run profile.

nbval compares every cell's stored text output with a fresh run, unless the cell starts with
`# NBVAL_IGNORE_OUTPUT`. The outputs are stored from a quick-profile run, so a compared cell that prints a value
derived from the profile (a preset, a recipe, a training result, a timing) fails under the full profile -- on a
GPU, where a failure costs the most to find. This test reads each notebook's code with `ast`, follows which names
are derived from such a source (cell by cell, in order), and fails when a compared cell with stored text prints
or displays one of them, or calls `claim` (its line ends with the profile's name). A cell whose output is the same in every profile although it uses such a name (an exact
ln K from a zero head, say) says so in a comment: `# profile-independent: <why>`.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
# What a run's profile decides: the profile itself, the recipes, training and evaluation results, the clock.
SOURCE_NAMES = {"profile", "recipe", "recipes", "time"}
SOURCE_CALLS = {"fit", "fit_or_load", "pretrain_mpp", "pretrain_mpp_or_load", "evaluate", "evaluate_mpp",
                "predict", "train_or_load", "get_profile", "perf_counter", "training_set", "frozen_features"}
OPT_OUT = re.compile(r"#\s*profile-independent:\s*\S")
FIGURE = re.compile(r"^<Figure size [\d.]+x[\d.]+ with \d+ Axes>$")


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _calls(node: ast.AST) -> set[str]:
    out = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Call):
            f = n.func
            out.add(f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", ""))
    return out


def _is_source(node: ast.AST, tainted: set[str]) -> bool:
    """Whether an expression reads the profile, a recipe, a run's result or the clock (or a name derived from one)."""
    names = _names(node)
    return bool(names & tainted or names & SOURCE_NAMES or _calls(node) & SOURCE_CALLS
                or any("recipe" in n for n in names))


def _bound(target: ast.AST) -> tuple[set[str], bool]:
    """(names a target binds or mutates, whether it rebinds them): `a`, `a, b` rebind; `a[i]`, `a.x` mutate `a`."""
    if isinstance(target, ast.Name):
        return {target.id}, True
    if isinstance(target, (ast.Tuple, ast.List)):
        parts = [_bound(t) for t in target.elts]
        return set().union(*(p[0] for p in parts)) if parts else set(), all(p[1] for p in parts)
    if isinstance(target, ast.Starred):
        return _bound(target.value)
    base = target
    while isinstance(base, (ast.Subscript, ast.Attribute)):
        base = base.value
    return ({base.id} if isinstance(base, ast.Name) else set()), False


def _statements(tree: ast.AST):
    """Every node of a cell in source order (so a later assignment can rebind an earlier one)."""
    nodes = [n for n in ast.walk(tree) if hasattr(n, "lineno")]
    return sorted(nodes, key=lambda n: (n.lineno, n.col_offset))


def taint(code: str, tainted: set[str], modules: set[str]) -> None:
    """Update `tainted`, the names derived from the profile, with this cell: an assignment from a profile-dependent
    expression taints its targets and one from anything else rebinds them clean; loops, `with ... as`, mutations
    (`x.append(v)`, `x[k] = v`) and functions that read a tainted global taint too. Imported modules never are."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return

    def bind(target, source: bool):
        names, rebinds = _bound(target)
        names -= modules
        if source:
            tainted.update(names)
        elif rebinds:
            tainted.difference_update(names)

    for node in _statements(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            modules.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                bind(t, _is_source(node.value, tainted))
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and node.value is not None:
            if _is_source(node.value, tainted):
                bind(node.target, True)
        elif isinstance(node, (ast.For, ast.comprehension)):
            bind(node.target, _is_source(node.iter, tainted))
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            bind(node.optional_vars, _is_source(node.context_expr, tainted))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if any(_is_source(a, tainted) for a in [*node.args, *(k.value for k in node.keywords)]):
                bind(node.func.value, True)  # x.append(tainted): x now holds a profile-dependent value
        elif isinstance(node, ast.FunctionDef):
            if _is_source(node, tainted - {node.name}):
                tainted.add(node.name)


def _displayed(code: str) -> list[ast.AST]:
    """The expressions a cell prints or displays: print(...) arguments and a last bare expression."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    shown = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") in ("print", "display")]
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        shown.append(tree.body[-1].value)
    return shown


def _text_outputs(cell) -> list[str]:
    texts = []
    for o in cell.get("outputs", []):
        if o["output_type"] == "stream" and o.get("name") == "stdout":
            texts.append("".join(o["text"]))
        elif "text/plain" in o.get("data", {}) and not FIGURE.match("".join(o["data"]["text/plain"]).strip()):
            texts.append("".join(o["data"]["text/plain"]))
    return texts


def _calls_claim(code: str) -> bool:
    """Whether a cell calls `minivit.claims.claim`, whose printed line names the profile that ran it."""
    try:
        return "claim" in _calls(ast.parse(code))
    except SyntaxError:
        return False


def findings(cells: list[dict]) -> list[str]:
    """'cell N: prints <names>' for every compared cell that shows a profile-dependent value."""
    tainted: set[str] = set()
    modules: set[str] = set()
    out = []
    for i, cell in enumerate(cells):
        if cell["cell_type"] != "code":
            continue
        code = "".join(cell["source"])
        code_lines = "\n".join(line for line in code.splitlines() if not line.lstrip().startswith("%"))
        taint(code_lines, tainted, modules)
        if code.lstrip().startswith("# NBVAL_IGNORE_OUTPUT") or OPT_OUT.search(code) or not _text_outputs(cell):
            continue
        bad = sorted({n for e in _displayed(code_lines) for n in _names(e) & (tainted | SOURCE_NAMES) - modules}
                     | {c for e in _displayed(code_lines) for c in _calls(e) & SOURCE_CALLS})
        if _calls_claim(code_lines):  # its line ends with the profile's name, "[quick]" or "[full]"
            bad = sorted(set(bad) | {"claim"})
        if bad:
            out.append(f"cell {i}: its compared output shows {', '.join(bad)}, which depend on the profile; "
                       "mark it # NBVAL_IGNORE_OUTPUT, or say why not with # profile-independent: <why>")
    return out


def _cell(src: str, text: str = "x\n") -> dict:
    return {"cell_type": "code", "source": src, "outputs": [{"output_type": "stream", "name": "stdout", "text": text}]}


def test_the_lint_finds_what_it_should():
    cells = [_cell("epochs = profile.pick(3, 30)\nsteps = epochs * 10", ""),
             _cell("print(steps)"),  # derived from the profile, compared: found
             _cell("# NBVAL_IGNORE_OUTPUT\nprint(steps)"),  # ignored: fine
             _cell("h = recipe.fit(model, train)\nacc = h.final['val_acc']", ""),
             _cell("runs = {}\nruns['a'] = acc\nprint(len(runs))"),  # mutated with a result: found
             _cell("print(3 * 4)"),  # constant: fine
             _cell("# profile-independent: a zero head gives ln K in any run\nprint(acc)"),
             _cell("f'{acc:.2f}'"),  # a displayed last expression: found
             _cell("import torch\ntorch.manual_seed(acc)\nacc = 0.5\nprint(torch.zeros(2), acc)"),  # rebound: fine
             _cell("_ = claim('a claim on a committed record', 4.0, above=3)")]  # prints "[quick]": found
    got = findings(cells)
    assert [g.split(":")[0] for g in got] == ["cell 1", "cell 4", "cell 7", "cell 9"], got


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_compared_outputs_do_not_depend_on_the_profile(path):
    problems = findings(json.loads(path.read_text())["cells"])
    assert not problems, f"{path.name}:\n  " + "\n  ".join(problems)
