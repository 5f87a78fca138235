"""Grading tools: run an answer with ready-made solutions refused, and compare it with a reference case by case.

    from minivit.grading import guarded, check_cases
    answer = guarded(my_patchify, ["minivit.patching.patchify"], "cut the patches yourself")
    check_cases("patchify", answer, minivit.patchify, [("8x12 image, P = 4", (x, 4))])

`without(paths, hint)` is a context manager in which the callables at `paths` refuse to run: each call raises
`Shortcut("solve it without <path>: <hint>")`. The refusal is made on the callables themselves, not on the names
that hold them, so it reaches the ordinary ways an answer can hold one -- a module's name, a notebook global, a
closure, a default argument, a `functools.partial`, a list, an object's attribute, an `nn.Module` instance:

- a Python function (the package's functions, methods such as `torch.nn.MultiheadAttention.forward`) has its
  `__code__` swapped for one that raises, and put back on the way out;
- a PyTorch function (`torch.nn.functional.scaled_dot_product_attention`, `F.interpolate`, and the same operator
  reached through `torch.ops.aten`) is refused by a `torch.overrides.TorchFunctionMode`, which sees every call of
  PyTorch's Python API whichever name it was reached by;
- a path naming a module refuses every function defined in it (and in its loaded submodules); a path naming a
  class refuses every method defined in its body.

A refusal is remembered: an answer that catches the `Shortcut` (`try: ... except Exception: ...`) and returns
something else is still refused when the block ends. `guarded(fn, paths, hint)` wraps an answer so that each of
its calls runs `without` the paths, and nothing else does -- a check's own expected values, computed with the very
functions the answer may not call, stay unaffected. `graded_with(fn, name=reference)` lets a later part of an
assignment run with the reference implementation of an earlier part, so one mistake costs its own points once.

Nothing an answer writes to stderr costs it points (nbgrader scores a test cell 0 when anything reaches stderr):
`guarded` answers and every case `check_cases` and the `minivit.exercises` checks run (`_run`) go through
`stderr_on_stdout()` (minivit/grading_capture.py, re-exported here), which shows it on stdout; a wrong answer still
fails with its message.

The checks compare with what they took when grading was first imported, not with what the names hold later:
`torch.allclose`, `torch.equal`, `torch.isclose`, `torch.testing.assert_close`, `torch.Tensor` and its attributes,
kept in a read-only record (`_ORIGINAL`, held in three places that must agree; the grading kernel's extension,
`minivit.grading_kernel`, keeps a copy). `_compare` and `close` (for a test cell's own comparison) take only a plain
tensor (`torch.Tensor` or `nn.Parameter`, no subclass: a subclass decides itself how it compares), and refuse to
compare while `tampered()` finds PyTorch's comparisons rebound, one of torch.Tensor's methods set, or a PyTorch mode
an answer left active. `guarded` refuses, before and after each call of the answer, when anything `tampered()`
reports was changed (the package's functions or their code too, or the record itself); `restore()` puts back what
it can. What this does not catch: the answer runs in the test cells' own process, so code that reaches these
objects otherwise (`gc`, a function's `__closure__` or `__defaults__`, a copy of this module with its checks
removed) can undo any of it. The checks are hard to fake by accident or by a one-line trick, not tamper-proof:
`minivit.grading_kernel` refuses the cells after an answer that changed the kernel, and the scan of the
submissions (`python -m minivit.autograde scan`, `minivit.grading_scan`) lists for the instructor what such code
needs.

Their code is refused too (`minivit.grading_code.CodeBan`, a `sys.setprofile` hook while the block runs): a call
of another function object whose code is a banned function's -- its module run again from its file, a function
re-made from a saved code object, a verbatim copy of its source -- or of a banned C function is recorded and refused
when the block ends. This is a hint against using the ready-made solution, hard to get round by accident; it is not
a security boundary (a copy of the source with a line changed, code run in another thread, gets round it). What
protects grading from a submission is the sandboxed grading command, `python -m minivit.autograde`.
Introduced in 00_start_here.ipynb with `minivit.exercises`, whose checks use it; the nbgrader kit in `assignments/`
grades with it.
"""

from __future__ import annotations

import functools
import importlib
import sys
import types
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

import torch
from torch.overrides import TorchFunctionMode

from .grading_capture import Captured, stderr_on_stdout
from .grading_code import CodeBan

__all__ = ["CheckResult", "Shortcut", "without", "guarded", "graded_with", "check_cases", "tampered", "restore",
           "close", "stderr_on_stdout", "Captured"]


class Shortcut(Exception):
    """Raised when an answer calls a callable that its check has put out of reach (see `without`)."""


_ACTIVE: list["_Guard"] = []  # the guards in force, innermost last


def _refused(path: str, name: str = "") -> Shortcut:
    """The exception a refused callable raises (`name`: the callable, when `path` names its module or class);
    every guard in force records it, so a caught refusal still counts."""
    shown = name or path
    for guard in _ACTIVE:
        if path in guard.paths:
            error = Shortcut(f"solve it without {shown}: {guard.hint}" if guard.hint else f"solve it without {shown}")
            guard.refusals.append(error)
            return error
    return Shortcut(f"solve it without {shown}")


def _resolve(path: str):
    """The object at a dotted path ("torch.nn.functional.interpolate", "minivit.Attention.forward"), or None."""
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        try:
            for name in parts[i:]:
                obj = getattr(obj, name)
        except AttributeError:
            return None
        return obj
    return None


def _functions_of(obj) -> Iterable:
    """The callables that `obj` stands for: a module's (and its loaded submodules') functions and classes' methods,
    a class's methods, or `obj` itself."""
    if isinstance(obj, types.ModuleType):
        prefix = obj.__name__
        for module in [m for name, m in list(sys.modules.items()) if name == prefix or name.startswith(prefix + ".")]:
            for value in list(vars(module).values()):
                if getattr(value, "__module__", None) == module.__name__:
                    yield from _functions_of(value) if isinstance(value, type) else [value]
    elif isinstance(obj, type):
        for value in vars(obj).values():
            value = value.__func__ if isinstance(value, (staticmethod, classmethod)) else value
            if isinstance(value, types.FunctionType):
                yield value
    else:
        yield obj


def _refusing_code(fn: types.FunctionType, path: str, name: str) -> types.CodeType:
    """A code object with `fn`'s free variables (so it fits `fn`'s closure) whose body raises
    `_refused(path, name)`. It runs with `fn`'s globals, so it reaches this module through `__import__`, which
    every module has."""
    free = fn.__code__.co_freevars
    lines = ["def _outer():", *[f"    {v} = None" for v in free], "    def _refuse(*args, **kwargs):"]
    if free:
        lines.append(f"        ({', '.join(free)},)")  # mentioned, so they are free variables of _refuse
    lines += [f"        raise __import__('minivit.grading', fromlist=['_'])._refused({path!r}, {name!r})", "    return _refuse"]
    namespace: dict = {}
    exec(compile("\n".join(lines), f"<refused: {path}>", "exec"), namespace)
    return namespace["_outer"]().__code__


class _RefuseTorch(TorchFunctionMode):
    """Refuses the banned PyTorch functions, however they are reached (torch.ops.aten included, by name)."""

    def __init__(self, banned: dict):
        super().__init__()
        self.banned = banned  # function -> path
        self.names = {getattr(f, "__name__", None): p for f, p in banned.items()}

    def __torch_function__(self, func, types_, args=(), kwargs=None):
        path = self.banned.get(func) if _hashable(func) else None
        if path is None and type(func).__module__ == "torch._ops":  # torch.ops.aten.NAME(.overload)
            path = self.names.get(str(getattr(func, "__name__", "")).split(".")[0])
        if path is not None:
            raise _refused(path)
        return func(*args, **(kwargs or {}))


def _hashable(value) -> bool:
    try:
        hash(value)
        return True
    except TypeError:
        return False


class _Guard:
    def __init__(self, paths: Sequence[str], hint: str):
        self.paths, self.hint, self.refusals = list(paths), hint, []


@contextmanager
def without(paths: Sequence[str], hint: str = ""):
    """Within the block, the callables at `paths` raise `Shortcut("solve it without <path>: <hint>")` wherever they
    are called from (see the module docstring). A path that does not exist here (a name an older PyTorch lacks, a
    module not installed) is skipped. If a refusal happened and the block swallowed it, the block's end raises it.
    Everything is put back on the way out, on an error too. Put only the answer's call in the block."""
    guard = _Guard(paths, hint)
    swapped: list[tuple[types.FunctionType, types.CodeType, str, str]] = []  # function, its code, path, name shown
    torch_banned: dict = {}
    for path in paths:
        obj = _resolve(path)
        if obj is None:
            continue
        for fn in _functions_of(obj):
            chain, seen = [], set()
            while fn is not None and id(fn) not in seen:  # a decorated function and the ones it wraps
                seen.add(id(fn))
                chain.append(fn)
                fn = getattr(fn, "__wrapped__", None)
            for f in chain:
                if isinstance(f, types.FunctionType) and all(f is not s for s, *_ in swapped):
                    # a module path names the function refused; a function or class path names itself
                    shown = f"{f.__module__}.{f.__qualname__}" if isinstance(obj, types.ModuleType) else ""
                    swapped.append((f, f.__code__, path, shown))
                elif not isinstance(f, types.FunctionType) and callable(f) and _hashable(f):
                    torch_banned[f] = path
                if isinstance(f, types.FunctionType) and f.__module__ and f.__module__.startswith("torch"):
                    torch_banned[f] = path  # a PyTorch Python function: also refused by the mode
    def record(path: str, shown: str, how: str) -> None:  # a banned code ran under another name (CodeBan)
        message = f"solve it without {shown or path}" + (f": {hint}" if hint else "")
        guard.refusals.append(Shortcut(f"{message} ({how})" if how else message))

    # by code, too: the banned functions' code run through another function object, banned C functions called
    ban = CodeBan([(f, path, shown) for f, _, path, shown in swapped],
                  [(f, path) for f, path in torch_banned.items() if not isinstance(f, types.FunctionType)], record)
    started = False
    _ACTIVE.append(guard)
    try:
        for fn, _, path, shown in swapped:
            fn.__code__ = _refusing_code(fn, path, shown)
        with _RefuseTorch(torch_banned) if torch_banned else nullcontext():
            if ban:
                ban.start()
                started = True
            yield guard
    finally:
        if started and not ban.stop():
            guard.refusals.append(Shortcut("the answer changed the profile function (sys.setprofile) that the guard "
                                           "watches its calls with: solve it without changing it"))
        for fn, code, *_ in swapped:
            fn.__code__ = code
        _ACTIVE.remove(guard)
    if guard.refusals:  # the answer caught a refusal and went on: it is refused all the same
        raise guard.refusals[0]


# The modules whose bindings are kept: the package's (all of its submodules) and the functional API that checks'
# references call. Not torch itself: PyTorch rebinds some of its own names when it loads parts of itself (e.g.
# torch.manual_seed, wrapped when torch._dynamo loads); its comparisons are kept apart (`_REFERENCES`).
_WATCHED = ("minivit", "torch.nn.functional", "scipy.ndimage")
# What the comparisons of the checks use, by the name an answer would rebind: taken once, and used only as taken.
_REFERENCES = ("torch.Tensor", "torch.nn.Parameter", "torch.allclose", "torch.equal", "torch.isclose",
               "torch.testing.assert_close")
_MISSING = object()
# What Python itself caches on a class the first time it needs it, not an answer's doing: copyreg's `__slotnames__`,
# set on torch.Tensor when a tensor is first pickled or copied (torch.save, copy.deepcopy of a model).
_CACHES = frozenset({"__slotnames__"})


def _attributes(cls: type) -> dict:
    """A class's own attributes, but the caches Python keeps there (`_CACHES`)."""
    return {k: v for k, v in vars(cls).items() if k not in _CACHES}


def _bindings() -> dict:
    """(module, name) -> (callable, its code or None) for the callables bound in the watched modules now."""
    found = {}
    for name, module in list(sys.modules.items()):
        if isinstance(module, types.ModuleType) and (name in _WATCHED or name.startswith("minivit.")):
            for key, value in list(vars(module).items()):
                if callable(value):
                    found[name, key] = (value, getattr(value, "__code__", None))
    return found


def _current(path: str):
    """What `torch.a.b` is bound to now (None where it is not)."""
    obj = torch
    for part in path.split(".")[1:]:
        obj = getattr(obj, part, None)
    return obj


def _record() -> types.MappingProxyType:
    """The package's bindings, PyTorch's comparisons and torch.Tensor's attributes as they are now, read-only."""
    return types.MappingProxyType({
        "bindings": types.MappingProxyType(_bindings()),
        "references": types.MappingProxyType({path: _current(path) for path in _REFERENCES}),
        "tensor": types.MappingProxyType(_attributes(torch.Tensor)),
    })


# Taken when grading is first imported (the grading kernel's extension, minivit.grading_kernel, when the kernel
# starts; else an assignment's locked set-up cell) and kept across a reload of this module. Read-only mappings, held
# in three places that must agree (here, in sys, and `tampered`'s default), and copied by the kernel extension: an
# answer cannot clear it in one line, and replacing it is seen.
_RECORD_KEY = "_minivit_grading_record"
_ORIGINAL = sys.__dict__.setdefault(_RECORD_KEY, _record())
_TENSOR = _ORIGINAL["references"]["torch.Tensor"]
_PARAMETER = _ORIGINAL["references"]["torch.nn.Parameter"]
_allclose = _ORIGINAL["references"]["torch.allclose"]
_equal = _ORIGINAL["references"]["torch.equal"]


def _foreign_modes() -> list[str]:
    """The PyTorch function or dispatch modes in force that are not a guard's (nor torch.set_default_device's): a
    mode left active by an answer sees, and can answer, every comparison."""
    from torch.utils._device import DeviceContext  # noqa: PLC0415

    modes = [type(m).__name__ for m in torch.overrides._get_current_function_mode_stack()
             if not isinstance(m, (_RefuseTorch, DeviceContext))]
    if torch._C._len_torch_dispatch_stack():
        modes.append("a dispatch mode")
    return [f"a PyTorch mode left active ({', '.join(modes)})"] if modes else []


def _references_changed(record) -> list[str]:
    """PyTorch's comparisons and torch.Tensor's attributes that differ from `record`, and foreign modes in force."""
    changed = [path for path, value in record["references"].items() if _current(path) is not value]
    tensor, now = record["tensor"], _attributes(record["references"]["torch.Tensor"])
    changed += sorted(f"torch.Tensor.{k}" for k in set(tensor) | set(now)
                      if tensor.get(k, _MISSING) is not now.get(k, _MISSING))
    return changed + _foreign_modes()


def _record_problem(record) -> list[str]:
    """What is wrong with grading's record `record`: empty when it is the one all three places hold."""
    held = (sys.__dict__.get(_RECORD_KEY), globals().get("_ORIGINAL"))
    if not isinstance(record, types.MappingProxyType) or any(r is not record for r in held):
        return ["minivit.grading's record of the package's functions (replaced or removed)"]
    return []


def tampered(_record=_ORIGINAL) -> list[str]:
    """What was changed since grading was first imported, that the checks rely on: the package's (or the functional
    API's) callables rebound or their code replaced (an answer cell that sets `minivit.attention_rollout =
    my_rollout` would make the check's reference its own answer), PyTorch's comparisons (`torch.allclose`,
    `torch.equal`, `torch.isclose`, `torch.testing.assert_close`, `torch.Tensor` itself) rebound, an attribute of
    `torch.Tensor` (its methods: `allclose`, `float`, `__eq__`, ...) set or removed, a PyTorch mode left active, or
    grading's own record replaced. Empty when nothing was."""
    problem = _record_problem(_record)
    if problem:
        return problem
    now = _bindings()

    def changed(key, value, code) -> bool:
        if key not in now:
            return False
        value_now, code_now = now[key]
        if value_now is not value:
            return True
        refusing = _ACTIVE and code_now is not None and code_now.co_filename.startswith("<refused")  # a guard's own
        return code_now is not code and not refusing
    rebound = sorted(f"{m}.{n}" for (m, n), (value, code) in _record["bindings"].items()
                     if changed((m, n), value, code))
    return rebound + _references_changed(_record)


def restore(_record=_ORIGINAL) -> list[str]:
    """Put back what `tampered()` reports, as far as it can: the package's callables and their code, PyTorch's
    comparisons, torch.Tensor's attributes (not a foreign mode, not the record itself). Returns what it put back.
    The grading kernel's extension calls it before refusing the cells that follow an answer that changed them."""
    if _record_problem(_record):
        return []
    put_back = []
    for (module, name), (value, code) in _record["bindings"].items():
        held = sys.modules.get(module)
        if held is None:
            continue
        if vars(held).get(name, _MISSING) is not value:
            setattr(held, name, value)
            put_back.append(f"{module}.{name}")
        if code is not None and getattr(value, "__code__", code) is not code and not _ACTIVE:
            value.__code__ = code
            put_back.append(f"{module}.{name}")
    for path, value in _record["references"].items():
        if _current(path) is not value:
            owner = _current(path.rsplit(".", 1)[0]) if path.count(".") > 1 else torch
            setattr(owner, path.rsplit(".", 1)[1], value)
            put_back.append(path)
    tensor = _record["references"]["torch.Tensor"]
    now = _attributes(tensor)
    for k in set(now) | set(_record["tensor"]):
        if _record["tensor"].get(k, _MISSING) is not now.get(k, _MISSING):
            if k in _record["tensor"]:
                setattr(tensor, k, _record["tensor"][k])
            else:
                delattr(tensor, k)
            put_back.append(f"torch.Tensor.{k}")
    return sorted(set(put_back))


def _refuse_if_tampered(when: str = "") -> None:
    changed = tampered()
    if changed:
        raise Shortcut(f"the package's own functions or PyTorch's comparisons were changed{when} "
                       f"({', '.join(changed[:3])}): grading needs them as they are; solve it without changing them")


def _plain(value, what: str) -> str | None:
    """None when `value` is a plain tensor (torch.Tensor or nn.Parameter, no subclass); else what it is instead."""
    if type(value) is _TENSOR or type(value) is _PARAMETER:
        return None
    if isinstance(value, _TENSOR):
        return (f"{what} is a {type(value).__name__}, a subclass of torch.Tensor: expected a plain torch.Tensor "
                f"(a subclass decides itself how it compares)")
    return f"{what} is a {type(value).__name__}, expected a plain torch.Tensor"


def close(got, expected, rtol: float = 1e-5, atol: float = 1e-8) -> bool:
    """`torch.allclose(got, expected)` with the function taken when grading was imported, for test cells: True or
    False on plain tensors; raises Shortcut (a message saying what was expected) when either is not a plain tensor
    or PyTorch's comparisons were changed (see `tampered`)."""
    for value, what in ((got, "the answer's value"), (expected, "the expected value")):
        problem = _plain(value, what)
        if problem:
            raise Shortcut(problem)
    changed = _references_changed(_ORIGINAL)
    if changed:
        raise Shortcut(f"PyTorch's comparisons were changed ({', '.join(changed[:3])}): grading needs them as they are")
    return bool(_allclose(got, expected, rtol=rtol, atol=atol))


def guarded(fn: Callable, paths: Sequence[str], hint: str = "") -> Callable:
    """`fn` whose every call runs `without(paths, hint)`, after checking that nothing the checks rely on was changed
    (see `tampered`) -- and again after the call, so an answer that changes them while it runs is refused too --,
    with what it writes to stderr, and its warnings, shown on stdout instead (`stderr_on_stdout`): a test cell that
    calls the answer itself loses no points to them. The wrapper keeps `fn`'s name and docstring."""
    @functools.wraps(fn)
    def answer(*args, **kwargs):
        _refuse_if_tampered()
        with stderr_on_stdout(), without(paths, hint):
            value = fn(*args, **kwargs)
        _refuse_if_tampered(" while the answer ran")
        return value
    return answer


@contextmanager
def graded_with(fn: Callable, **references):
    """Within the block, the names in `fn`'s globals (a notebook's namespace) are bound to `references`: a later
    part that calls an earlier part's answer runs with its reference, so it is graded on its own. Where `fn` holds
    the earlier answer itself -- a default argument (`def mha(..., attend=attention)`), a keyword-only default or a
    closure's variable -- that is replaced by the reference too. Everything is put back after."""
    namespace = getattr(fn, "__globals__", None)
    if namespace is None:
        raise TypeError(f"graded_with needs a Python function, got {type(fn).__name__}")
    missing = object()
    before = {name: namespace.get(name, missing) for name in references}
    answers = [(before[name], reference) for name, reference in references.items() if before[name] is not missing]

    def swapped(value):  # the reference for an earlier answer held by value, else the value itself
        return next((reference for answer, reference in answers if value is answer), value)

    defaults, kwdefaults = fn.__defaults__, fn.__kwdefaults__
    cells = [(cell, cell.cell_contents) for cell in (fn.__closure__ or ()) if _filled(cell)]
    namespace.update(references)
    if defaults:
        fn.__defaults__ = tuple(swapped(v) for v in defaults)
    if kwdefaults:
        fn.__kwdefaults__ = {k: swapped(v) for k, v in kwdefaults.items()}
    for cell, value in cells:
        cell.cell_contents = swapped(value)
    try:
        yield
    finally:
        fn.__defaults__, fn.__kwdefaults__ = defaults, kwdefaults
        for cell, value in cells:
            cell.cell_contents = value
        for name, value in before.items():
            if value is missing:
                namespace.pop(name, None)
            else:
                namespace[name] = value


def _filled(cell) -> bool:
    """Whether a closure cell holds a value (a variable assigned after the function was made may not yet)."""
    try:
        cell.cell_contents
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class CheckResult:
    """The outcome of one `check_*` call: how many cases passed, and what went wrong in the others."""

    name: str  # what was checked, e.g. "patchify"
    passed: int  # cases that passed
    total: int  # cases run
    failures: tuple[str, ...] = field(default=())  # one message per failed case

    def __bool__(self) -> bool:
        return self.passed == self.total

    def __repr__(self) -> str:
        return f"CheckResult({self.name!r}: {self.passed}/{self.total} passed)"


def _run(name: str, cases, verbose: bool) -> CheckResult:
    """`cases`: (label, thunk) pairs; a thunk returns None when right, else a message. Exceptions are failures.
    Each thunk runs under `stderr_on_stdout`: what the answer writes to stderr is shown on stdout."""
    passed, failures, lines = 0, [], []
    for label, thunk in cases:
        try:
            with stderr_on_stdout():
                problem = thunk()
        except Shortcut as e:  # the answer called a function its check put out of reach
            problem = str(e)
        except Exception as e:  # the student's code raised: report it, do not raise
            problem = f"raised {type(e).__name__}: {e}"
        if problem is None:
            passed += 1
            lines.append(f"  ✓ {label}")
        else:
            failures.append(f"{label}: {problem}")
            lines.append(f"  ✗ {label}: {problem}")
    result = CheckResult(name, passed, len(cases), tuple(failures))
    if verbose:
        verdict = "all correct" if result else f"{result.total - result.passed} of {result.total} wrong"
        print(f"{name}: {verdict}")
        print("\n".join(lines))
    return result


def _copy(value):
    """A copy of `value` that shares no tensor memory with it (tensors cloned, in tuples and lists too)."""
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, (tuple, list)):
        return type(value)(_copy(v) for v in value)
    return value


def _call(fn, *args):
    """`fn(*args)` on copies of the tensor arguments: the check's own inputs stay as they were."""
    return fn(*(_copy(a) for a in args))


def _compare(got, expected: torch.Tensor, atol: float = 1e-5, what: str = "output",
             order_hint: str = "") -> str | None:
    """None when `got` is a tensor equal to `expected` (shape, then values); else what differs. When the values
    are all there but in another order, says so, followed by `order_hint`. Only a plain tensor is compared (a
    subclass is refused: it decides itself how it compares), with the comparison taken when grading was imported,
    and not while PyTorch's comparisons stand changed (see `tampered`)."""
    if not isinstance(got, torch.Tensor) and not isinstance(got, _TENSOR):
        return f"returned {type(got).__name__}, expected a tensor of shape {tuple(expected.shape)}"
    problem = _plain(got, what) or _plain(expected, "the check's expected value")
    if problem:
        return problem
    changed = _references_changed(_ORIGINAL)
    if changed:
        return f"PyTorch's comparisons were changed ({', '.join(changed[:3])}): grading needs them as they are"
    if tuple(got.shape) != tuple(expected.shape):
        return f"{what} has shape {tuple(got.shape)}, expected {tuple(expected.shape)}"
    if not _allclose(got.float(), expected.float(), atol=atol, rtol=1e-4):
        err = (got.float() - expected.float()).abs().max().item()
        message = f"{what} has the right shape but wrong values (largest difference {err:.3g})"
        if _allclose(got.float().flatten().sort().values, expected.float().flatten().sort().values,
                     atol=atol, rtol=1e-4):
            message += "; the values are all there, in another order" + (f": {order_hint}" if order_hint else "")
        return message
    return None


def check_cases(name: str, fn: Callable, reference: Callable, cases: Sequence[tuple[str, tuple]],
                mistakes: Sequence[tuple[Callable, str]] = (), atol: float = 1e-5, what: str = "output",
                order_hint: str = "", verbose: bool = True):
    """Compare `fn(*args)` with `reference(*args)` for each `(label, args)` of `cases`, in the style of
    `minivit.exercises`: a `CheckResult`, one line per case, never raising. When a wrong answer equals what a known
    mistake computes (`mistakes`: pairs of a function with the reference's signature and the hint to give), the
    hint is added to the message. Tensor arguments are copied for each call, so an answer that changes its
    input in place spoils nothing."""
    def case(args):
        def run():
            expected = reference(*args)
            got = _call(fn, *args)
            problem = _compare(got, expected, atol=atol, what=what, order_hint=order_hint)
            if problem and isinstance(got, torch.Tensor) and got.shape == expected.shape:
                for mistake, hint in mistakes:
                    wrong = mistake(*args)
                    if wrong.shape == got.shape and _allclose(got.float(), wrong.float(), atol=atol, rtol=1e-4):
                        return f"{problem}: {hint}"
            return problem
        return run
    return _run(name, [(label, case(args)) for label, args in cases], verbose)
