"""Refusing by code: notice a banned function's code running under another function object, or a banned C routine.

`minivit.grading.without` refuses the banned functions themselves (their `__code__` swapped, PyTorch's through a
`TorchFunctionMode`). An answer can still run the same code through a function object the guard never saw: the
package's module executed again from its own file (`importlib.util.module_from_spec` + `exec_module`), a function
re-made from a code object saved before the guard started (`types.FunctionType(f.__code__, ...)`), a method re-made
in a subclass, or the module's source text executed again (`exec(inspect.getsource(minivit.patching))`). Each of
these runs code that is the banned function's: the same file, name and first line, or (for a copy of the source) the
same bytecode, constants, names and local names -- on Python 3.11 a verbatim copy compiles to equal `co_code`,
`co_consts`, `co_names` and `co_varnames` under another file name, checked in tests/test_grading_code.py.

`CodeBan` is a `sys.setprofile` hook, installed while a guard is active, that looks at every Python call ('call'
events) and every call of a C function ('c_call' events, e.g. `scipy.ndimage._nd_image.zoom_shift`, the C routine
under `scipy.ndimage.zoom`) and, when one matches a banned function, calls `record(path, name)` -- it records and
never raises inside the profiler; the guard raises the refusal when its block ends. What it compares is built once
when the guard starts (a dict of keys), and each code object met is looked up once. An existing profile function is
chained (called for every event) and put back afterwards.

This is a hint against running the ready-made solution, hard to get round by accident, not a security boundary: a
copy of the source with a changed docstring or renamed variable, code run in another thread, or an answer that
changes the profile function itself gets round it (the guard refuses the last when its block ends). What protects
grading from a submission is the sandboxed grading command (`python -m minivit.autograde`). Used by
`minivit.grading.without`, and so by the nbgrader kit in `assignments/`.
"""

from __future__ import annotations

import sys
import types
from typing import Callable, Iterable

__all__ = ["CodeBan", "code_keys"]

# Code shorter than this (in bytes of bytecode) is matched by location only: a one-line method such as
# `def __len__(self): return len(self.images)` compiles alike in unrelated classes (minivit.data's and
# minivit.train.loop's), so its content says nothing about where it was copied from.
_MIN_CONTENT = 64
_COPIED = "its code ran under another function object: a copy, or its module loaded again"


def _content(code: types.CodeType) -> tuple:
    """What a copy of `code`'s source compiles to whatever its file name: the bytecode, the constants (nested code
    objects by their own content, each constant with its type, so that 1 and True differ), the global and attribute
    names, the arguments' and locals' names."""
    consts = tuple(("code", _content(c)) if isinstance(c, types.CodeType) else (type(c).__name__, c)
                   for c in code.co_consts)
    return code.co_code, consts, code.co_names, code.co_varnames, code.co_argcount, code.co_kwonlyargcount


def code_keys(code: types.CodeType) -> tuple[tuple | None, tuple]:
    """(location, content) of a code object: location is (file, name, first line), None for code compiled from a
    string (file "<...>"), where it says nothing; content is what `_content` compares."""
    location = None if code.co_filename.startswith("<") else (code.co_filename, code.co_name, code.co_firstlineno)
    return location, _content(code)


def _own_code(fn: types.FunctionType) -> bool:
    """Whether `fn`'s code is its own: a function defined at a module's top level or in a class body. Left out: a
    decorator's wrapper (`functools.wraps` copies the name, not the code, so the wrapper's code is shared by every
    function it wraps) and functions made by a factory (`f.<locals>.g`), whose code other functions share."""
    code = fn.__code__
    return code.co_qualname == fn.__qualname__ and "<locals>" not in code.co_qualname


def _c_key(obj) -> tuple | None:
    """(module, name) of a C function defined at a module's top level (`scipy.ndimage._nd_image.zoom_shift`), which
    stays the same in a copy of the module loaded again; None for anything else."""
    module, name = getattr(obj, "__module__", None), getattr(obj, "__name__", None)
    return (module, name) if isinstance(module, str) and isinstance(name, str) else None


class CodeBan:
    """While started, a profile hook that calls `record(path, name, how)` once for each banned code that runs (`how`
    says what ran: "" for the banned C function itself, else a few words for a copy).

    functions: (Python function, path, name shown) triples -- each function's code is banned, by location and by
    content (a function whose code is not its own is skipped, see `_own_code`); builtins: (callable, path) pairs
    of C functions, matched by identity or by (module, name) on 'c_call' events."""

    def __init__(self, functions: Iterable[tuple[types.FunctionType, str, str]],
                 builtins: Iterable[tuple[object, str]], record: Callable[[str, str, str], None]):
        self.record = record
        self.locations: dict = {}
        self.contents: dict = {}
        for fn, path, shown in functions:
            if isinstance(fn, types.FunctionType) and _own_code(fn):
                location, content = code_keys(fn.__code__)
                label = (path, shown or f"{fn.__module__}.{fn.__qualname__}", _COPIED)
                if location is not None:
                    self.locations.setdefault(location, label)
                if len(fn.__code__.co_code) >= _MIN_CONTENT:
                    self.contents.setdefault(content, label)
        self.c_ids: dict = {}
        self.c_names: dict = {}
        for obj, path in builtins:
            if isinstance(obj, types.BuiltinFunctionType):
                self.c_ids[id(obj)] = (obj, path)  # the object kept, so that its id is not reused
                key = _c_key(obj)
                if key is not None:
                    self.c_names.setdefault(key, path)
        self.c_short = {name for _, name in self.c_names}
        self._seen: dict = {}  # id(code) -> (code, label or None): each code object looked up once
        self._recorded: set = set()
        self._previous = self._hook = None
        self._restart = None

    def __bool__(self) -> bool:
        return bool(self.locations or self.contents or self.c_ids)

    def _match(self, code: types.CodeType):
        location, content = code_keys(code)
        return self.locations.get(location) if location is not None and location in self.locations else \
            self.contents.get(content)

    def _hit(self, label) -> None:
        if label not in self._recorded:
            self._recorded.add(label)
            self.record(*label)

    def _make_hook(self, previous):
        """The profile function: a closure over local names, as it runs at every call the answer makes."""
        seen, seen_get, match, hit = self._seen, self._seen.get, self._match, self._hit
        c_ids_get, c_short, c_names_get = self.c_ids.get, self.c_short, self.c_names.get

        def hook(frame, event, arg):
            if event == "call":
                code = frame.f_code
                found = seen_get(id(code))
                if found is None:
                    found = seen[id(code)] = (code, match(code))
                if found[1] is not None:
                    hit(found[1])
            elif event == "c_call":
                found = c_ids_get(id(arg))
                if found is not None and found[0] is arg:
                    hit((found[1], "", ""))
                elif getattr(arg, "__name__", None) in c_short:  # a copy of a C function (its module loaded again)
                    path = c_names_get(_c_key(arg))
                    if path is not None:
                        hit((path, "", "a copy of it ran, from its module loaded again"))
            if previous is not None:
                previous(frame, event, arg)
        return hook

    def start(self) -> None:
        """Install the hook, chaining the profile function in force (a C profiler such as cProfile's, which cannot
        be called from Python, is switched off and switched on again by `stop`)."""
        previous = sys.getprofile()
        if previous is not None and type(previous).__name__ == "Profiler" and hasattr(previous, "enable"):
            self._restart, previous = previous, None  # cProfile.Profile: not callable as a profile function
        self._previous, self._hook = previous, self._make_hook(previous)
        sys.setprofile(self._hook)

    def stop(self) -> bool:
        """Remove the hook and put back what was there; False when the hook was no longer installed (the block
        changed the profile function)."""
        intact = sys.getprofile() is self._hook
        sys.setprofile(self._previous)
        if self._restart is not None:
            self._restart.enable()
        self._seen.clear()
        return intact
