"""The grading kernel's keeper: an IPython extension that refuses every cell after an answer cell that changed how
the kernel runs cells, the names the locked cells defined, or what the checks compare with.

    python -m minivit.autograde NAME --kit KIT      # each submission's kernel starts with this extension loaded
    %load_ext minivit.grading_kernel                # by hand, in a kernel of your own

The nbgrader kit in `assignments/` grades with it: `python -m minivit.autograde` starts every submission's kernel
with `--IPKernelApp.extensions=minivit.grading_kernel`, and `assignments/nbgrader_config.py` passes the same to the
kernels of a plain `nbgrader autograde` (`ExecutePreprocessor.extra_arguments`). Nothing happens on import; loading
it wraps the shell's `transform_cell`, which ipykernel calls on each cell before anything of it runs. Before each
cell the wrapper compares, with what they were when the extension was loaded:

- the kernel's input transformers (`input_transformers_cleanup`, the line and token transformers,
  `input_transformers_post`), its AST transformers, the shell's methods that run a cell or show its error
  (`run_cell`, `run_code`, `showtraceback`, ...), and the callbacks of its events (`pre_run_cell`, `post_execute`,
  ...; matplotlib's inline backend may add its own);
- the names the first cell (an assignment's locked set-up cell) bound to a module, a function or a class (`torch`,
  `minivit`, `rearrange`, `guarded`, `check_cases`, the notebook's own helpers), and, wherever they were bound, the
  names bound to a function or class of `minivit.grading` or `minivit.exercises` (the checks);
- `minivit.grading.tampered()`: the package's functions and their code, PyTorch's comparisons (`torch.allclose`,
  `torch.equal`, `torch.Tensor`'s methods, ...), a PyTorch mode left active, grading's own record (checked against
  the copy this extension keeps).

When anything changed, it puts back what it can (the transformer lists, the shell's methods, the events, the
names, `minivit.grading.restore()`), and that cell and every later one is refused: it raises `GradingRefused`
("grading refused: an answer cell changed ...") before any of it runs, so each later test cell scores 0 with that
message. The cells before it keep their scores.

What it cannot do: the answer runs in this same process, so code that knows this extension can undo it first (put
the shell's own `transform_cell` back, or change what the wrapper's closure holds), act from a thread, clear a
cell's output, or change a value the locked cells hold that is not a module, function or class (a tensor, a
model). This is a shared kernel: the checks are made hard to fake by accident or by a one-line trick, not
tamper-proof. The scan of the submissions before grading (`minivit.grading_scan`) lists the constructs such code
needs, for the instructor to read.
"""

from __future__ import annotations

import inspect
import re
import sys
import types

_MISSING = object()
# The shell's methods that run a cell, compile or transform it, or show its error: an answer that replaced one could
# run the test cells otherwise, or show no error for them. Compared by what the shell holds (not a bound method).
_SHELL_METHODS = ("run_cell", "run_cell_async", "run_ast_nodes", "run_code", "transform_ast", "showtraceback",
                  "_showtraceback", "showsyntaxerror", "set_custom_exc", "should_run_async")
_SHELL_OBJECTS = ("input_transformer_manager", "compile", "displayhook", "display_pub", "events", "user_ns",
                  "custom_exceptions", "CustomTB", "InteractiveTB", "SyntaxTB", "ast_transformers",
                  "input_transformers_post")
_MANAGER_LISTS = ("cleanup_transforms", "line_transforms", "token_transformers")
# IPython's own names in a user namespace (history and output caches, In/Out, exit): never a locked cell's.
_IPYTHON_NAME = re.compile(r"^(_+|_i+|_i?\d+|_[iod]h|In|Out|get_ipython|exit|quit|open)$")
# Callbacks a kernel's own machinery adds to its events (module, name): matplotlib's inline backend, when a cell
# first draws; compared by identity with what that module holds.
_ALLOWED_CALLBACKS = (("matplotlib_inline.backend_inline", "flush_figures"),
                      ("ipykernel.pylab.backend_inline", "flush_figures"))


class GradingRefused(Exception):
    """Raised in place of every cell after an answer cell that changed the kernel, the locked cells' names or the
    checks' references (see the module docstring)."""

    def _render_traceback_(self) -> list[str]:  # IPython shows this instead of the frames of the check
        return [f"GradingRefused: {self}"]


def _watched_kind(value) -> bool:
    return isinstance(value, (types.ModuleType, types.FunctionType, types.BuiltinFunctionType, type))


class Keeper:
    """What one shell looked like when the extension was loaded, and the check made before each cell."""

    def __init__(self, shell):
        import minivit.exercises  # noqa: F401, PLC0415 (the checks, so that the record holds them)
        import minivit.grading as grading  # noqa: PLC0415 (takes the record, if the set-up cell has not yet)

        self.shell, self.grading = shell, grading
        self.record, self.record_copy = grading._ORIGINAL, {k: dict(v) for k, v in grading._ORIGINAL.items()}
        self.late: dict = {}  # the bindings of the package's modules that the first cell loaded (B's minivit.train)
        self.tampered, self.tampered_code = grading.tampered, grading.tampered.__code__
        self.original_transform = shell.transform_cell
        self.methods = {name: inspect.getattr_static(shell, name, _MISSING) for name in _SHELL_METHODS}
        self.objects = {name: getattr(shell, name, _MISSING) for name in _SHELL_OBJECTS}
        manager = shell.input_transformer_manager
        self.lists = {("manager", name): list(getattr(manager, name)) for name in _MANAGER_LISTS}
        self.lists.update({("shell", name): list(getattr(shell, name)) for name in ("ast_transformers",
                                                                                     "input_transformers_post")})
        self.callbacks = {event: list(cbs) for event, cbs in shell.events.callbacks.items()}
        self.start_count = shell.execution_count
        self.names: dict[str, object] | None = None  # the first cell's names, once it has run
        self.checks: dict[str, object] = {}  # names bound to minivit.grading's or minivit.exercises' callables
        self.refusal: str | None = None

    # ---- what changed -----------------------------------------------------------------------------------------

    def _kernel_changes(self) -> list[str]:
        shell, changed = self.shell, []
        for name, value in self.methods.items():
            if inspect.getattr_static(shell, name, _MISSING) is not value:
                changed.append(f"the shell's {name}")
        for name, value in self.objects.items():
            if getattr(shell, name, _MISSING) is not value:
                changed.append(f"the shell's {name}")
        for (owner, name), saved in self.lists.items():
            held = getattr(shell.input_transformer_manager if owner == "manager" else shell, name, None)
            if held is None or list(held) != saved or any(a is not b for a, b in zip(held, saved)):
                changed.append("the kernel's " + {"cleanup_transforms": "input transformers (cleanup)",
                                                  "line_transforms": "input transformers (line)",
                                                  "token_transformers": "input transformers (token)",
                                                  "input_transformers_post": "input transformers (post)",
                                                  "ast_transformers": "AST transformers"}[name])
        allowed = [getattr(sys.modules.get(module), name, _MISSING) for module, name in _ALLOWED_CALLBACKS]
        events = getattr(self.objects["events"], "callbacks", {})
        for event in sorted(set(events) | set(self.callbacks)):
            now, saved = events.get(event, []), self.callbacks.get(event, [])
            extra = [cb for cb in now if all(cb is not s for s in saved)]
            if any(all(s is not cb for cb in now) for s in saved) or any(all(cb is not a for a in allowed)
                                                                         for cb in extra):
                changed.append(f"the kernel's {event} callbacks")
        return changed

    def _name_changes(self) -> list[str]:
        ns = self.shell.user_ns
        if self.names is None and self.shell.execution_count > self.start_count:  # the first cell has run
            self.names = {k: v for k, v in ns.items() if _watched_kind(v) and not _IPYTHON_NAME.match(k)}
            self.late = {k: v for k, v in self.grading._bindings().items() if k not in self.record["bindings"]}
        checks = [vars(m) for m in (sys.modules.get("minivit.grading"), sys.modules.get("minivit.exercises")) if m]
        for k, v in list(ns.items()):  # the checks, wherever they were first bound
            if k not in self.checks and _watched_kind(v) and any(v is c.get(getattr(v, "__name__", None))
                                                                  for c in checks):
                self.checks[k] = v
        held = {**(self.names or {}), **self.checks}
        return [f"`{k}`" for k, v in sorted(held.items()) if ns.get(k, _MISSING) is not v]

    def _grading_changes(self) -> list[str]:
        grading = sys.modules.get("minivit.grading")
        copy_changed = any(len(self.record.get(k, ())) != len(v) or any(self.record[k].get(n, _MISSING) is not x
                                                                         for n, x in v.items())
                           for k, v in self.record_copy.items())
        if grading is not self.grading or grading._ORIGINAL is not self.record or copy_changed or \
                self.tampered.__code__ is not self.tampered_code:
            return ["minivit.grading itself (its record, or its module)"]
        now = self.grading._bindings()
        late = sorted(f"{m}.{n}" for (m, n), (value, code) in self.late.items()
                      if (m, n) in now and (now[m, n][0] is not value or now[m, n][1] is not code))
        return self.tampered(self.record) + late

    # ---- putting back -----------------------------------------------------------------------------------------

    def _restore(self) -> None:
        shell = self.shell
        for name, value in self.methods.items():
            if inspect.getattr_static(shell, name, _MISSING) is not value:
                vars(shell).pop(name, None)
                if inspect.getattr_static(shell, name, _MISSING) is not value and value is not _MISSING:
                    setattr(shell, name, value)
        for name, value in self.objects.items():
            if value is not _MISSING and getattr(shell, name, _MISSING) is not value:
                setattr(shell, name, value)
        for (owner, name), saved in self.lists.items():
            getattr(shell.input_transformer_manager if owner == "manager" else shell, name)[:] = saved
        shell.events.callbacks.update({event: list(cbs) for event, cbs in self.callbacks.items()})
        held = {**(self.names or {}), **self.checks}
        shell.user_ns.update(held)
        if sys.modules.get("minivit.grading") is self.grading:
            self.grading._ORIGINAL = sys.__dict__[self.grading._RECORD_KEY] = self.record  # its copy: compared above
            self.grading.restore(self.record)
            for (module, name), (value, code) in self.late.items():
                if module in sys.modules:
                    setattr(sys.modules[module], name, value)
                    if code is not None:
                        value.__code__ = code

    # ---- before each cell -------------------------------------------------------------------------------------

    def transform_cell(self, raw_cell: str) -> str:
        """The shell's transform_cell, after the check: raises GradingRefused when anything changed, then and for
        every later cell."""
        if self.refusal is None:
            changed = self._kernel_changes() + self._name_changes()
            changed += self._grading_changes()
            if changed:
                self._restore()
                self.refusal = (f"grading refused: an answer cell changed {', '.join(changed[:6])}"
                                + (f" and {len(changed) - 6} more" if len(changed) > 6 else "")
                                + ", which the test cells rely on; this cell and every later one are not run "
                                  "(solve the exercises without changing the kernel, the set-up cell's names or "
                                  "PyTorch's and minivit's functions)")
        if self.refusal is not None:
            raise GradingRefused(self.refusal)
        return self.original_transform(raw_cell)


def load_ipython_extension(shell) -> None:
    """`%load_ext minivit.grading_kernel`, or the kernel's `--IPKernelApp.extensions`: start keeping `shell`. Loaded
    again (`%reload_ext`), it keeps what it kept: there is no unloading it (no `unload_ipython_extension`), so an
    answer cell cannot stop it with a magic."""
    if getattr(shell, "_minivit_keeper", None) is not None:
        return
    keeper = Keeper(shell)
    shell._minivit_keeper = keeper
    shell.transform_cell = keeper.transform_cell
