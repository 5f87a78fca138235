"""The public API: every exported name exists, and importing prints nothing and seeds nothing."""

import subprocess
import sys

import minivit


def test_all_exports_exist():
    missing = [n for n in minivit.__all__ if not hasattr(minivit, n)]
    assert not missing and len(set(minivit.__all__)) == len(minivit.__all__)
    for name in ("ViT", "ViTConfig", "patchify", "resize_pos_embed", "fit", "get_profile"):
        assert name in minivit.__all__


def test_import_has_no_side_effects():
    code = (
        "import torch; s = torch.random.get_rng_state().clone(); "
        "import minivit, minivit.data, minivit.viz, minivit.cli; "
        "assert torch.equal(s, torch.random.get_rng_state()), 'import changed the RNG'"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "", f"import printed {out.stdout!r}"


def test_command_line_modules_run_once():
    """`python -m minivit.data` / `-m minivit.train` must not be imported by the package first (runpy warns)."""
    for module in ("minivit.data", "minivit.train"):
        out = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-m", module, "--help"],
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        assert "usage:" in out.stdout


def test_import_is_light_and_lazy_names_load_on_use():
    code = ("import sys, minivit; assert 'torchvision' not in sys.modules, 'import minivit imported torchvision'; "
            "assert minivit.CifarResNet.__module__ == 'minivit.cnn' and minivit.recipes.__name__ == 'minivit.recipes'; "
            "assert 'torchvision' in sys.modules")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr


def _import_graph(module_level_only: bool = False) -> dict[str, set[str]]:
    """{module: the minivit modules it imports}, read from the source (function-level imports too, unless
    `module_level_only`); `minivit.x.y` for `from .x import y` when y is a module."""
    import ast
    from pathlib import Path
    root = Path(minivit.__file__).parent
    files = {}
    for p in root.rglob("*.py"):
        parts = list(p.relative_to(root.parent).with_suffix("").parts)
        files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = p
    graph = {}
    for name, path in files.items():
        tree = ast.parse(path.read_text())
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        nodes = tree.body if module_level_only else list(ast.walk(tree))
        deps = set()
        for node in nodes:
            if isinstance(node, ast.ImportFrom):
                base = ".".join(package[:len(package) - node.level + 1] + ([node.module] if node.module else [])) \
                    if node.level else (node.module or "")
                deps |= {f"{base}.{a.name}" if f"{base}.{a.name}" in files else base for a in node.names}
            elif isinstance(node, ast.Import):
                deps |= {a.name for a in node.names}
        graph[name] = {d for d in deps if d in files and d != name}
    return graph


def test_no_import_circles():
    """train <-> cli was a circle (train's __main__ imported cli, cli imported train); none may come back."""
    graph = _import_graph()
    assert graph["minivit.train.__main__"] == {"minivit.cli"} and "minivit.cli" not in graph["minivit.train"]
    state, cycles = {}, []

    def visit(node, path):
        state[node] = "open"
        for dep in sorted(graph[node] - {"minivit"}):  # a submodule importing the package's __init__ is no edge
            if state.get(dep) == "open":
                cycles.append(path[path.index(dep):] + [dep])
            elif dep not in state:
                visit(dep, path + [dep])
        state[node] = "done"
    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    assert not cycles, f"import circles: {cycles}"


def test_checkpoint_is_a_leaf():
    """Every module may import minivit.checkpoint: it imports no minivit module at import time, and load_model's
    lazy imports (the model classes) never lead back to it."""
    graph = _import_graph()
    assert _import_graph(module_level_only=True)["minivit.checkpoint"] == set()
    reach, todo = set(), list(graph["minivit.checkpoint"])
    while todo:
        m = todo.pop()
        if m not in reach:
            reach.add(m)
            todo += graph[m]
    assert "minivit.checkpoint" not in reach and reach <= {"minivit.config", "minivit.vit", "minivit.embeddings",
                                                          "minivit.encoder", "minivit.attention", "minivit.patching",
                                                          "minivit.hybrid", "minivit.cnn"}


def test_every_module_imports_in_a_fresh_process():
    import pkgutil
    names = [m.name for m in pkgutil.walk_packages(minivit.__path__, "minivit.") if not m.name.endswith("__main__")]
    code = "import importlib; [importlib.import_module(n) for n in %r]" % sorted(names, reverse=True)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
