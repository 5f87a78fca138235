"""The grading kernel's keeper (minivit.grading_kernel, issue 38 item 2) and the references of minivit.grading: an
answer cell that changes the kernel's input transformers, the set-up cell's names, PyTorch's comparisons or
grading's record gets every later cell refused, with a message; honest cells are untouched. Cells run in IPython's
own shell, in this process (the hunt's rows 19-26, ../shared/reviews/assignments-bypass-hunt.md)."""

import sys

import pytest
import torch

pytest.importorskip("IPython", reason="IPython is in [dev] (with jupyterlab)")
from IPython.core.interactiveshell import InteractiveShell  # noqa: E402

import minivit.grading as grading  # noqa: E402
from minivit import grading_kernel  # noqa: E402
from minivit.grading import Shortcut, close, guarded, tampered  # noqa: E402

# The locked set-up cell, as assignment A's: modules, the checks, grading's helpers.
SETUP = """
import math
import torch
import minivit
from minivit.exercises import check_patchify
from minivit.grading import CheckResult, check_cases, close, graded_with, guarded
"""
TEST_CELL = """
answer = guarded(my_patchify, ["minivit.patching"], "cut the patches yourself")
result = check_patchify(answer)
assert result, result.failures
"""
RIGHT = """
def my_patchify(images, patch_size):
    b, c, h, w = images.shape
    grid = images.reshape(b, c, h // patch_size, patch_size, w // patch_size, patch_size)
    return grid.permute(0, 2, 4, 3, 5, 1).reshape(b, -1, patch_size * patch_size * c)
"""
ZEROS = """
def my_patchify(images, patch_size):
    b, c, h, w = images.shape
    return torch.zeros(b, (h // patch_size) * (w // patch_size), patch_size * patch_size * c)
"""


def run(sh, code: str):
    """A cell as ipykernel runs a notebook's: counted in the history."""
    return sh.run_cell(code, store_history=True)


@pytest.fixture(scope="module", autouse=True)
def _main_module_put_back():
    """IPython's shell puts its own __main__ (no __spec__) into sys.modules; the next test file in this process
    (torch.multiprocessing's spawn in test_distributed, under xdist's loadfile) needs the real one back."""
    main = sys.modules["__main__"]
    yield
    InteractiveShell.clear_instance()
    sys.modules["__main__"] = main


@pytest.fixture
def shell():
    """IPython's shell with the keeper loaded and the set-up cell run; everything put back after."""
    sh = InteractiveShell.instance()
    sh.reset(new_session=False)
    grading_kernel.load_ipython_extension(sh)
    assert run(sh, SETUP).success
    yield sh
    keeper = sh._minivit_keeper
    keeper._restore()  # what a test's answer changed, for the next test
    vars(sh).pop("transform_cell", None)
    del sh._minivit_keeper
    sh.reset(new_session=False)
    assert tampered() == [], tampered()


def _refused(result) -> str:
    assert not result.success, "the cell ran"
    error = result.error_before_exec
    assert isinstance(error, grading_kernel.GradingRefused), repr(error)
    return str(error)


def test_honest_cells_run_as_they_are(shell):
    assert run(shell, RIGHT).success
    for _ in range(2):  # a test cell rebinds `answer` and `result`, as the assignments' do
        ran = run(shell, TEST_CELL)
        assert ran.success, ran.error_in_exec
    assert run(shell, "import math\nfrom minivit.grading import guarded\nx = torch.ones(3)").success
    wrong = run(shell, ZEROS + TEST_CELL)  # a wrong answer still fails, in the cell itself
    assert isinstance(wrong.error_in_exec, AssertionError) and wrong.error_before_exec is None


@pytest.mark.parametrize("attack, what", [
    ("get_ipython().input_transformers_cleanup.append(lambda lines: ['pass\\n'])", "input transformers (cleanup)"),
    ("get_ipython().input_transformers_post.append(lambda lines: ['pass\\n'])", "input transformers (post)"),
    ("import ast\nclass Pass(ast.NodeTransformer):\n    def visit_Module(self, node):\n"
     "        return ast.Module(body=[ast.Pass()], type_ignores=[])\nget_ipython().ast_transformers.append(Pass())",
     "AST transformers"),
    ("get_ipython().events.register('pre_run_cell', lambda info: None)", "pre_run_cell callbacks"),
    ("get_ipython().showtraceback = lambda *a, **k: None", "the shell's showtraceback"),
])
def test_a_changed_kernel_refuses_this_cell_and_every_later_one(shell, attack, what):
    """Rows 24-26: an input transformer made every later cell, test cells included, run `pass`."""
    assert run(shell, ZEROS + attack).success
    message = _refused(run(shell, TEST_CELL))
    assert message.startswith("grading refused: an answer cell changed") and what in message, message
    assert "every later one" in message
    _refused(run(shell, "x = 1"))  # and every later cell, though what was changed is put back
    assert shell.user_ns.get("x") is None
    keeper = shell._minivit_keeper
    assert keeper._kernel_changes() == [], "not put back"


@pytest.mark.parametrize("attack, name", [
    ("guarded = lambda fn, paths, hint='': fn", "`guarded`"),  # row 19
    ("check_patchify = lambda *a, **k: CheckResult('patchify', 4, 4)", "`check_patchify`"),  # row 20
    ("def check_cases(*args, **kwargs):\n    return CheckResult('x', 1, 1)", "`check_cases`"),
    ("torch = None", "`torch`"),
    ("del minivit", "`minivit`"),
])
def test_rebinding_the_set_up_cells_names_is_refused(shell, attack, name):
    assert run(shell, ZEROS + attack).success
    message = _refused(run(shell, TEST_CELL))
    assert name in message and "grading refused" in message, message
    assert shell.user_ns["guarded"] is grading.guarded and shell.user_ns["torch"] is torch  # put back


def test_a_check_imported_in_a_later_cell_is_kept_too(shell):
    assert run(shell, "from minivit.exercises import check_attention").success
    assert run(shell, "x = 2").success
    assert run(shell, "check_attention = print").success
    assert "`check_attention`" in _refused(run(shell, "x = 3"))


@pytest.mark.parametrize("attack, what", [
    ("torch.allclose = torch.equal = lambda *a, **k: True", "torch.allclose"),  # row 21
    ("torch.Tensor.allclose = lambda *a, **k: True", "torch.Tensor.allclose"),
    ("minivit.grading._ORIGINAL = {}", "minivit.grading itself"),  # row 23, with the record replaced
    ("minivit.patching.patchify.__code__ = my_patchify.__code__", "minivit.patching.patchify"),  # row 23's second half
    ("import torch.overrides\nclass Yes(torch.overrides.TorchFunctionMode):\n"
     "    def __torch_function__(self, func, types, args=(), kwargs=None):\n        return True\nYes().__enter__()",
     "PyTorch mode"),
])
def test_changed_references_refuse_every_later_cell_and_are_put_back(shell, attack, what):
    original = torch.allclose
    assert run(shell, ZEROS + attack).success
    message = _refused(run(shell, TEST_CELL))
    assert what in message, message
    if what == "PyTorch mode":  # not put back (a mode is not a binding): leave it, as the cell that entered it would
        torch.overrides._pop_mode()
    assert torch.allclose is original and "allclose" not in vars(torch.Tensor)
    assert minivit_patchify_is_intact()


def minivit_patchify_is_intact() -> bool:
    import minivit.patching
    return minivit.patching.patchify.__code__.co_filename.endswith("patching.py")


def test_reloading_the_extension_keeps_what_it_kept(shell):
    assert run(shell, "get_ipython().input_transformers_post.append(lambda lines: lines)").success
    grading_kernel.load_ipython_extension(shell)  # what %reload_ext does after the answer changed the kernel
    assert "input transformers (post)" in _refused(run(shell, "x = 1"))
    assert not hasattr(grading_kernel, "unload_ipython_extension"), "an answer could stop the keeper with a magic"


# ---- the references of minivit.grading, without the kernel (rows 21-23) --------------------------------------

def _zeros(x, p):
    b, c, h, w = x.shape
    return torch.zeros(b, (h // p) * (w // p), p * p * c)


def test_a_tensor_subclass_is_refused_by_the_comparison():
    """Row 22: zeros as a Tensor subclass whose allclose and equal say True, no global changed."""
    class Agreeable(torch.Tensor):
        def allclose(self, *args, **kwargs):
            return True

        def equal(self, *args, **kwargs):
            return True

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            if func in (torch.allclose, torch.equal, torch.Tensor.allclose, torch.Tensor.equal):
                return True
            return super().__torch_function__(func, types, args, kwargs or {})

    result = grading.check_cases("patchify", lambda x, p: _zeros(x, p).as_subclass(Agreeable),
                                 grading._resolve("minivit.patchify"), [("a case", (torch.rand(1, 3, 8, 8), 4))],
                                 verbose=False)
    assert not result and "subclass of torch.Tensor" in result.failures[0], result.failures
    with pytest.raises(Shortcut, match="subclass of torch.Tensor: expected a plain torch.Tensor"):
        close(torch.ones(3).as_subclass(Agreeable), torch.ones(3))
    assert close(torch.ones(3), torch.ones(3)) and not close(torch.ones(3), torch.zeros(3))
    assert close(torch.nn.Parameter(torch.ones(2)), torch.ones(2))  # a parameter is a plain tensor


def test_replaced_comparisons_are_refused_by_guarded_and_not_used(monkeypatch):
    """Row 21: torch.allclose = torch.equal = lambda *a, **k: True, with zero answers."""
    import minivit
    answer = guarded(_zeros, ["minivit.patching"])
    assert answer(torch.rand(1, 3, 8, 8), 4).shape == (1, 4, 48)
    monkeypatch.setattr(torch, "allclose", lambda *a, **k: True)
    monkeypatch.setattr(torch, "equal", lambda *a, **k: True)
    assert set(tampered()) == {"torch.allclose", "torch.equal"}
    with pytest.raises(Shortcut, match="PyTorch's comparisons were changed"):
        answer(torch.rand(1, 3, 8, 8), 4)
    problem = grading._compare(_zeros(torch.rand(1, 3, 8, 8), 4), minivit.patchify(torch.rand(1, 3, 8, 8), 4))
    assert "comparisons were changed" in problem
    monkeypatch.undo()
    problem = grading._compare(_zeros(torch.rand(1, 3, 8, 8), 4), minivit.patchify(torch.rand(1, 3, 8, 8), 4))
    assert "wrong values" in problem


def test_an_answer_that_changes_the_references_while_it_runs_is_refused(monkeypatch):
    def sneaky(x, p):
        monkeypatch.setattr(torch.Tensor, "__eq__", lambda *a: True)
        return _zeros(x, p)
    with pytest.raises(Shortcut, match=r"while the answer ran \(torch.Tensor.__eq__\)"):
        guarded(sneaky, [])(torch.rand(1, 3, 8, 8), 4)


def test_grading_s_record_cannot_be_cleared_in_one_line(monkeypatch):
    """Row 23: minivit.grading._ORIGINAL.clear(), then patchify's code replaced."""
    with pytest.raises(AttributeError):
        grading._ORIGINAL.clear()
    with pytest.raises(TypeError):
        grading._ORIGINAL["bindings"][("minivit", "patchify")] = None
    import minivit.patching
    monkeypatch.setattr(minivit.patching.patchify, "__code__", _zeros.__code__)
    assert "minivit.patching.patchify" in tampered()
    monkeypatch.undo()
    monkeypatch.setattr(grading, "_ORIGINAL", grading._record())  # a record of its own, taken now
    assert tampered() == ["minivit.grading's record of the package's functions (replaced or removed)"]
    with pytest.raises(Shortcut, match="record"):
        guarded(_zeros, [])(torch.rand(1, 3, 8, 8), 4)


def test_restore_puts_back_what_tampered_reports(monkeypatch):
    import minivit
    original = (torch.allclose, minivit.patchify, minivit.patching.patchify.__code__)
    torch.allclose = lambda *a, **k: True
    minivit.patchify = _zeros
    minivit.patching.patchify.__code__ = _zeros.__code__
    torch.Tensor.float = lambda self: self
    try:
        assert {"torch.allclose", "minivit.patchify", "torch.Tensor.float"} <= set(tampered())
        assert {"torch.allclose", "minivit.patchify", "torch.Tensor.float"} <= set(grading.restore())
    finally:
        torch.allclose, minivit.patchify, minivit.patching.patchify.__code__ = original
        vars(torch.Tensor).get("float") and delattr(torch.Tensor, "float")
    assert tampered() == []
