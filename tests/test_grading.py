"""minivit.grading: the guard refuses the package's and PyTorch's solutions however an answer holds them, puts
everything back, and the grading helpers compare case by case (the bypasses of the instructor trial r2 among them)."""

import functools
import types

import pytest
import torch
import torch.nn.functional as F

import minivit
from minivit.grading import Shortcut, check_cases, graded_with, guarded, without


def _refused_code_left() -> list[str]:
    import sys
    return [f"{name}.{k}" for name, m in list(sys.modules.items())
            if isinstance(m, types.ModuleType) and name.split(".")[0] in ("minivit", "torch")
            for k, v in list(vars(m).items())
            if type(v) is types.FunctionType and v.__code__.co_filename.startswith("<refused")]


X = torch.rand(2, 3, 8, 12)
BOX = [minivit.patchify]


class Holder:
    def __init__(self):
        self.fn = minivit.patchify


def by_default_argument(x, p, _impl=minivit.patchify):
    return _impl(x, p)


def from_a_container(x, p):
    return BOX[0](x, p)


def from_an_object(x, p, _holder=Holder()):
    return _holder.fn(x, p)


def swallowing_the_refusal(x, p):  # detects the guard and answers something of the right shape
    try:
        return minivit.patchify(x, p)
    except Exception:
        return torch.zeros(x.shape[0], (x.shape[2] // p) * (x.shape[3] // p), p * p * x.shape[1])


@pytest.mark.parametrize("answer", [by_default_argument, functools.partial(minivit.patchify), from_a_container,
                                    from_an_object, swallowing_the_refusal, minivit.patchify],
                         ids=["default argument", "partial", "container", "object", "swallowed", "itself"])
def test_every_way_of_holding_the_package_function_is_refused(answer):
    with pytest.raises(Shortcut, match="solve it without minivit.patching.patchify: by hand"):
        with without(["minivit.patching.patchify"], "by hand"):
            answer(X, 4)
    assert minivit.patchify(X, 4).shape == (2, 6, 48) and not _refused_code_left()  # put back


def test_pytorch_functions_are_refused_by_any_name():
    q = torch.randn(1, 2, 3, 4)
    answers = [lambda q, _f=F.scaled_dot_product_attention: _f(q, q, q),
               lambda q: torch.ops.aten.scaled_dot_product_attention(q, q, q),
               lambda q: torch._C._nn.scaled_dot_product_attention(q, q, q)]
    for answer in answers:
        with pytest.raises(Shortcut, match="scaled_dot_product_attention"):
            with without(["torch.nn.functional.scaled_dot_product_attention"], "write the softmax"):
                answer(q)
    assert F.scaled_dot_product_attention(q, q, q).shape == q.shape


def test_modules_classes_and_methods():
    tokens = torch.randn(1, 3, 8)
    mha = torch.nn.MultiheadAttention(8, 2, batch_first=True)
    for path in ("torch.nn.MultiheadAttention.forward", "torch.nn.functional.multi_head_attention_forward"):
        with pytest.raises(Shortcut):
            with without([path], "write the heads out"):
                (lambda t, _m=mha: _m(t, t, t))(tokens)
    attn = minivit.Attention(8, 2)
    with pytest.raises(Shortcut, match="minivit.attention.Attention"):
        with without(["minivit.attention.Attention"], ""):
            attn(tokens)
    assert attn(tokens).shape == (1, 3, 8)
    from minivit.train import loop
    with pytest.raises(Shortcut, match="solve it without minivit.train.loop.train_step: write the loop"):  # a package
        with without(["minivit.train"], "write the loop"):
            (lambda _step=loop.train_step: _step(None, None, None, None))()
    maps = [torch.rand(1, 2, 5, 5).softmax(-1)]
    with pytest.raises(Shortcut):  # decorated functions: the wrapper and the function it wraps
        with without(["minivit.inspection.attention_rollout"], ""):
            (lambda m, _r=minivit.attention_rollout: _r(m))(maps)
    assert minivit.attention_rollout(maps).shape == (1, 5, 5) and not _refused_code_left()


def test_an_error_in_the_block_puts_everything_back_and_missing_paths_are_skipped():
    with pytest.raises(ZeroDivisionError):
        with without(["minivit.patching.patchify", "torch.nn.functional.interpolate"], ""):
            1 / 0
    assert not _refused_code_left()
    assert F.interpolate(torch.rand(1, 1, 2, 2), size=(4, 4)).shape == (1, 1, 4, 4)
    with without(["no_such_module.f", "minivit.inspection.no_such_name"], ""):
        pass


def test_guarded_refuses_only_the_answers_calls():
    answer = guarded(by_default_argument, ["minivit.patching.patchify"], "by hand")
    result = check_cases("patchify", answer, minivit.patchify, [("8x12", (X, 4))], verbose=False)
    assert not result and "solve it without minivit.patching.patchify: by hand" in result.failures[0]

    def mine(x, p):  # a correct answer: the reference, computed outside the guard, is untouched
        return x.unfold(2, p, p).unfold(3, p, p).permute(0, 2, 3, 4, 5, 1).reshape(x.shape[0], -1, p * p * x.shape[1])
    assert check_cases("patchify", guarded(mine, ["minivit.patching.patchify"]), minivit.patchify,
                       [("8x12", (X, 4))], verbose=False)


def test_check_cases_names_a_known_mistake():
    def channels_first(x, p):
        return x.unfold(2, p, p).unfold(3, p, p).permute(0, 2, 3, 1, 4, 5).reshape(x.shape[0], -1, p * p * x.shape[1])
    result = check_cases("patchify", channels_first, minivit.patchify, [("8x12", (X, 4))],
                         mistakes=[(channels_first, "flattened in (c p1 p2) order")], verbose=False)
    assert result.passed == 0 and result.failures[0].endswith("flattened in (c p1 p2) order")


def helper(x):
    return x + 1


def later_part(x):
    return helper(x) * 2


def test_graded_with_binds_the_reference_for_the_block_only():
    with graded_with(later_part, helper=lambda x: x + 10):
        assert later_part(0) == 20
    assert later_part(0) == 2
    with pytest.raises(TypeError, match="needs a Python function"):
        with graded_with(len, helper=None):
            pass



def test_graded_with_replaces_the_earlier_answer_held_by_value():
    """The hunt's W7: a later part holding the earlier answer as a default argument (or keyword-only default, or in
    a closure) ran the student's earlier part while graded; it runs the reference, and all is put back after."""
    def reference(x):
        return x + 10

    def by_default(x, attend=helper):
        return attend(x) * 2

    def by_keyword(x, *, attend=helper):
        return attend(x) * 2

    def make_closure():
        attend = helper
        return lambda x: attend(x) * 2

    by_closure = make_closure()
    other = abs  # a default that is not the earlier answer stays as it is

    def mixed(x, attend=helper, size=other):
        return attend(x) * 2 + size(-1)

    for fn in (by_default, by_keyword, by_closure, mixed):
        plain = fn(0)
        with graded_with(fn, helper=reference):
            assert fn(0) == plain + 18, fn
            assert helper is reference
        assert fn(0) == plain and helper(0) == 1, fn
    assert mixed.__defaults__ == (helper, abs) and by_keyword.__kwdefaults__ == {"attend": helper}
    assert by_closure.__closure__[0].cell_contents is helper
    with pytest.raises(RuntimeError):  # put back when the block raises too
        with graded_with(by_default, helper=reference):
            raise RuntimeError
    assert by_default.__defaults__ == (helper,)

def test_a_rebound_reference_is_refused(monkeypatch):
    """Helper C's finding: an answer cell could make the check's reference its own answer by rebinding it."""
    def mine(maps):
        return maps[0].mean(1)
    answer = guarded(mine, ["minivit.inspection.attention_rollout"])
    maps = [torch.rand(1, 2, 5, 5).softmax(-1)]
    assert answer(maps).shape == (1, 5, 5)
    monkeypatch.setattr(minivit, "attention_rollout", mine)
    with pytest.raises(Shortcut, match="minivit.attention_rollout"):
        answer(maps)
    monkeypatch.undo()
    monkeypatch.setattr(minivit.inspection.attention_rollout, "__code__", mine.__code__)  # its code replaced
    with pytest.raises(Shortcut, match="changed"):
        answer(maps)


def test_a_guarded_answer_inside_another_guard_is_not_taken_for_tampering():
    def mine(x, p):
        return x.unfold(2, p, p).unfold(3, p, p).permute(0, 2, 3, 4, 5, 1).reshape(x.shape[0], -1, p * p * x.shape[1])
    with without(["minivit.patching.patchify"]):
        assert guarded(mine, ["minivit.patching.patchify"])(X, 4).shape == (2, 6, 48)


# ---- stderr and warnings shown on stdout (issue 38, item 4: nbgrader scores a cell 0 when stderr is written) ----


def noisy_patchify(x, p):
    """A correct patchify that writes to stderr every way a student's answer does: a tqdm bar, a warning, a
    print to sys.stderr, a write on file descriptor 2 (as C code does)."""
    import os
    import sys
    import warnings

    from tqdm import tqdm
    for _ in tqdm(range(3), desc="cutting"):
        pass
    warnings.warn("a warning from the answer")
    print("a line on sys.stderr", file=sys.stderr)
    os.write(2, b"a line on fd 2\n")
    b, c, h, w = x.shape
    return x.reshape(b, c, h // p, p, w // p, p).permute(0, 2, 4, 3, 5, 1).reshape(b, -1, p * p * c)


def _shown_on_stdout(out: str) -> None:
    for line in ("the answer wrote to stderr: cutting: 100%", "the answer wrote to stderr: a line on sys.stderr",
                 "the answer wrote to stderr: a line on fd 2",
                 "the answer warned: UserWarning: a warning from the answer (test_grading.py:"):
        assert line in out, f"{line!r} not on stdout:\n{out}"


def test_a_correct_answer_writing_to_stderr_passes_and_what_it_wrote_is_on_stdout(capfd):
    from minivit.exercises import check_patchify
    answer = guarded(noisy_patchify, ["minivit.patching.patchify"], "by hand")
    assert check_cases("patchify", answer, minivit.patchify, [("8x12", (X, 4))])  # a test cell's check
    assert answer(X, 4).shape == (2, 6, 48)  # a test cell calling the answer itself
    out, err = capfd.readouterr()
    assert err == "" and "patchify: all correct" in out
    assert out.count("the answer wrote to stderr: a line on fd 2") == 2
    _shown_on_stdout(out)
    assert check_patchify(noisy_patchify)  # a notebook's check, on the answer as it is (not guarded)
    out, err = capfd.readouterr()
    assert err == "" and "patchify: all correct" in out
    _shown_on_stdout(out)


def test_a_wrong_answer_writing_to_stderr_still_fails_with_its_message(capfd):
    def wrong(x, p):
        return noisy_patchify(x, p).flip(1)  # the patches in reverse order

    def raising(x, p):
        noisy_patchify(x, p)
        raise ValueError("gave up")
    result = check_cases("patchify", guarded(wrong, []), minivit.patchify, [("8x12", (X, 4))], verbose=False)
    assert not result and "wrong values" in result.failures[0]
    result = check_cases("patchify", guarded(raising, []), minivit.patchify, [("8x12", (X, 4))], verbose=False)
    assert not result and result.failures[0] == "8x12: raised ValueError: gave up"
    with pytest.raises(ValueError, match="gave up"):  # called by a test cell: the error goes on as it was
        guarded(raising, [])(X, 4)
    out, err = capfd.readouterr()
    assert err == "" and out.count("the answer wrote to stderr: a line on sys.stderr") == 3
    _shown_on_stdout(out)


def test_stderr_and_warnings_are_put_back_and_a_flood_is_cut_short(capfd):
    import os
    import sys
    import warnings

    from minivit.grading import stderr_on_stdout
    stderr, filters = sys.stderr, list(warnings.filters)
    with stderr_on_stdout() as captured:
        for i in range(100):
            print(f"line {i}", file=sys.stderr)
    assert sys.stderr is stderr and warnings.filters == filters
    assert captured.lines() == [f"line {i}" for i in range(100)]
    out, err = capfd.readouterr()
    assert err == "" and "the answer wrote to stderr: line 19\n" in out and "line 20" not in out
    assert out.rstrip().endswith("the answer wrote to stderr: ... and 80 more")
    print("after", file=sys.stderr)
    os.write(2, b"fd after\n")
    assert capfd.readouterr().err == "after\nfd after\n"  # stderr works as before once the block is over


def test_pytorchs_meshgrid_warning_costs_nothing():
    """The hunt's R3: a correct answer with torch.meshgrid(a, b) and no indexing= (PyTorch warns once a process,
    so in a fresh one)."""
    import subprocess
    import sys
    program = (
        "import torch\n"
        "from minivit.grading import guarded\n"
        "def centres(h, w):\n"
        "    rows, cols = torch.meshgrid(torch.arange(h) + 0.5, torch.arange(w) + 0.5)\n"
        "    return torch.stack([rows.flatten(), cols.flatten()], dim=-1)\n"
        "print(guarded(centres, [])(2, 3).shape)\n")
    run = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and run.stderr == "", run.stderr
    assert "the answer warned: UserWarning: torch.meshgrid: in an upcoming release" in run.stdout, run.stdout
    assert run.stdout.rstrip().endswith("torch.Size([6, 2])")
    # the control: called as it is, the same answer does warn on stderr (else this test would test nothing)
    bare = subprocess.run([sys.executable, "-c", program.replace("guarded(centres, [])", "centres")],
                          capture_output=True, text=True, timeout=120)
    assert bare.returncode == 0 and "torch.meshgrid: in an upcoming release" in bare.stderr, bare.stderr


def test_pickling_a_tensor_is_not_taken_for_tampering():
    """Python caches `__slotnames__` on torch.Tensor the first time a tensor is pickled or copied (torch.save, a
    model deep-copied): that is no answer changing PyTorch, and must not refuse the checks that follow."""
    import copyreg
    import io

    from minivit import grading
    had = "__slotnames__" in vars(torch.Tensor)
    saved = vars(torch.Tensor).get("__slotnames__")
    try:
        if had:
            del torch.Tensor.__slotnames__
        torch.save(torch.ones(2), io.BytesIO())  # what a notebook's checkpoint does
        copyreg._slotnames(torch.Tensor)  # and what sets the cache, whichever path reached it first
        assert "__slotnames__" in vars(torch.Tensor)
        assert grading.tampered() == []
        assert grading.close(torch.ones(2), torch.ones(2))
        assert guarded(lambda x: x + 1, ["minivit.patching"])(torch.zeros(1)).item() == 1
    finally:
        if had:
            torch.Tensor.__slotnames__ = saved
        elif "__slotnames__" in vars(torch.Tensor):
            del torch.Tensor.__slotnames__
    torch.Tensor.allclose_was_here = True  # a real change is still seen
    try:
        assert "torch.Tensor.allclose_was_here" in grading.tampered()
    finally:
        del torch.Tensor.allclose_was_here
