"""A stand-in for CUDA on a machine without a GPU: CPU tensors that say they are on "cuda:0" and obey CUDA's
device rules (test tooling, used by tests/test_notebook_devices.py; no notebook introduces it).

A model on a GPU fed a CPU tensor fails with "Expected all tensors to be on the same device"; a CPU run cannot
show it, and PyTorch's meta device and FakeTensorMode carry no values, so a notebook's cells cannot run under them
(they print, plot and assert values). Inside `standin_cuda()`:

- `.to("cuda")`, `.cuda()`, `Module.to("cuda")`, a factory with `device="cuda"` and `torch.Generator("cuda")` give
  CPU tensors (and generators) tagged as CUDA ones: their values are real, computed on the CPU, and `.device` says
  `cuda:0`; `.cpu()` / `.to("cpu")` drop the tag;
- an operation that mixes a tagged tensor with an untagged one of one or more dimensions raises RuntimeError, as
  CUDA does (a CPU scalar is allowed, as on CUDA; so are cross-device copies, CPU indices and `load_state_dict`);
- a random function whose generator is on the other device raises, as CUDA does for a CPU generator;
- `.numpy()` of a tagged tensor raises TypeError, as for a CUDA tensor;
- CUDA-only calls that have no CPU meaning (`torch.cuda.synchronize`, the CUDA RNG state) do nothing, the device's
  name says it is played by the CPU, its capability is an H100's (9, 0), and bf16 autocast on "cuda" is off
  (PyTorch disables it without a GPU).

What it cannot show: CUDA kernels, bf16 numerics, timings, memory. An optimizer step and gradient clipping are
not checked (their tensors are the model's own).
"""

from __future__ import annotations

import contextlib
import copy
import warnings

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_leaves

CUDA = torch.device("cuda", 0)  # what a tagged tensor reports as its device
CPU = torch.device("cpu")
_MESSAGE = "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu! ({})"


class OnCuda(torch.Tensor):
    """A CPU tensor playing one on CUDA (torch's default subclass handling carries the class to every result)."""


class CudaGenerator(torch._C.Generator):
    """A CPU generator playing one on CUDA."""

    @property
    def device(self):
        return CUDA


def _is_cuda(device) -> bool:
    return device is not None and torch.device(device).type == "cuda" if isinstance(device, (str, torch.device)) \
        else False


def on_cuda(t) -> bool:
    """True for a tensor tagged as on CUDA."""
    return isinstance(t, OnCuda)


def _tag(out):
    """Results of an operation asked for on CUDA, tagged (tensors only; anything else as it is)."""
    with torch._C.DisableTorchFunctionSubclass():
        if isinstance(out, torch.Tensor):
            return out if isinstance(out, OnCuda) else out.as_subclass(OnCuda)
        if isinstance(out, (tuple, list)):
            return type(out)(_tag(o) for o in out)
    return out


def _untag(t: torch.Tensor) -> torch.Tensor:
    with torch._C.DisableTorchFunctionSubclass():
        return t.as_subclass(torch.Tensor) if isinstance(t, OnCuda) else t


def _untag_all(out):
    """Results of an operation asked for on another device (the CPU, the meta device): not on CUDA, as there."""
    if isinstance(out, torch.Tensor):
        return _untag(out)
    if isinstance(out, (tuple, list)):
        return type(out)(_untag_all(o) for o in out)
    return out


def _target_device(args, kwargs):
    """The device a `Tensor.to(...)` call asks for, or None (a dtype-only call)."""
    if "device" in kwargs:
        return kwargs["device"]
    for a in args[1:]:
        if isinstance(a, (str, torch.device)):
            return a
        if isinstance(a, torch.Tensor):  # t.to(other): other's device
            return CUDA if on_cuda(a) else CPU
    return None


def _without_device(args, kwargs):
    args = tuple(CPU if isinstance(a, (str, torch.device)) and _is_cuda(a) else a for a in args)
    kwargs = {k: (CPU if k == "device" and _is_cuda(v) else v) for k, v in kwargs.items()}
    return args, kwargs


_RANDOM_EXEMPT = {"randperm"}  # CUDA accepts a CPU generator here
_MIXING_ALLOWED = {"copy_", "__setitem__", "__reduce_ex__", "__deepcopy__", "type_as", "new_tensor", "_has_compatible_shallow_copy_type",
                   "__get__", "__set__", "set_", "load_state_dict", "_set_from_file", "__repr__", "__format__"}


class _StandIn(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        name = getattr(func, "__name__", "")
        owner = getattr(func, "__self__", None)  # a property's getter: the descriptor it belongs to
        if owner is torch.Tensor.device and name == "__get__":
            return CUDA if on_cuda(args[0]) else func(*args)
        if owner is torch.Tensor.is_cuda and name == "__get__":
            return on_cuda(args[0])
        if owner is torch.Tensor.grad and name == "__get__":
            g = func(*args)
            return _tag(g) if g is not None and on_cuda(args[0]) else g
        if func in (torch.Tensor.to, torch.Tensor.cuda, torch.Tensor.cpu):
            target = CUDA if func is torch.Tensor.cuda else CPU if func is torch.Tensor.cpu else _target_device(args, kwargs)
            if target is None:
                return func(*args, **kwargs)
            if func is torch.Tensor.to:
                args, kwargs = _without_device(args, kwargs)
                out = func(_untag(args[0]), *(_untag(a) if isinstance(a, torch.Tensor) else a for a in args[1:]),
                           **kwargs)
            else:
                out = _untag(args[0])
            return _tag(out) if _is_cuda(target) else _untag(out)
        if func in (torch.Tensor.numpy, torch.Tensor.__array__) and on_cuda(args[0]):
            raise TypeError("can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the tensor "
                            "to host memory first.")
        if name == "__reduce_ex__" and on_cuda(args[0]):  # saved as a plain tensor: a CUDA tensor loaded on the CPU
            return _untag(args[0]).__reduce_ex__(*args[1:], **kwargs)
        if name == "__deepcopy__" and on_cuda(args[0]):  # copy.deepcopy of a model on the GPU
            copied = _tag(copy.deepcopy(_untag(args[0]).detach(), args[1]))
            if isinstance(args[0], torch.nn.Parameter):
                return torch.nn.Parameter(copied, args[0].requires_grad)
            return copied.requires_grad_(args[0].requires_grad)
        if func is torch.Tensor.pin_memory:
            return args[0]
        asks_cuda = _is_cuda(kwargs.get("device"))
        asks_other = kwargs.get("device") is not None and not asks_cuda  # e.g. empty_like(t, device="meta")
        if asks_cuda:
            args, kwargs = _without_device(args, kwargs)
        if name not in _MIXING_ALLOWED:
            self._check(func, name, args, kwargs, asks_cuda)
        out = func(*args, **kwargs)
        return _tag(out) if asks_cuda else _untag_all(out) if asks_other else out

    def _check(self, func, name, args, kwargs, asks_cuda):
        leaves = tree_leaves((args, kwargs))
        tensors = [t for t in leaves if isinstance(t, torch.Tensor)]
        if name == "__getitem__":  # CUDA tensors take CPU indices; a CPU tensor takes no CUDA index
            if not on_cuda(args[0]) and any(on_cuda(t) for t in tensors[1:]):
                raise RuntimeError("indices should be either on cpu or on the same device as the indexed tensor (cpu)")
            return
        cuda = asks_cuda or any(on_cuda(t) for t in tensors)
        if cuda:
            with torch._C.DisableTorchFunctionSubclass():
                cpu = [t for t in tensors if not on_cuda(t) and t.dim() > 0]
            if cpu:
                raise RuntimeError(_MESSAGE.format(f"in {name or func}, a CPU tensor of shape "
                                                   f"{tuple(cpu[0].shape)}"))
        generator = kwargs.get("generator") or next((a for a in leaves if isinstance(a, torch._C.Generator)), None)
        if generator is not None and name not in _RANDOM_EXEMPT:
            gen_cuda = isinstance(generator, CudaGenerator)
            if gen_cuda != cuda:
                want, got = ("cuda", "cpu") if cuda else ("cpu", "cuda")
                raise RuntimeError(f"Expected a '{want}' device type for generator but found '{got}' (in {name})")


class _Generator(torch._C.Generator):
    """`torch.Generator` inside the stand-in: `torch.Generator("cuda")` makes a `CudaGenerator`."""

    def __new__(cls, device="cpu"):
        if isinstance(device, int) or _is_cuda(device):
            return CudaGenerator()
        return torch._C.Generator(device)


@contextlib.contextmanager
def standin_cuda():
    """Run the body with CUDA played by tagged CPU tensors (see the module docstring)."""
    mode = _StandIn()
    saved = {name: getattr(torch.cuda, name) for name in ("synchronize", "get_rng_state", "set_rng_state",
                                                          "get_device_name", "get_device_capability")}
    generator = torch.Generator
    overwrite = torch.__future__.get_overwrite_module_params_on_conversion()
    torch.cuda.synchronize = lambda *a, **k: None
    torch.cuda.get_rng_state = lambda *a, **k: torch.get_rng_state()
    torch.cuda.set_rng_state = lambda *a, **k: None
    torch.cuda.get_device_name = lambda *a, **k: "CUDA played by the CPU (tests/cuda_standin.py)"
    torch.cuda.get_device_capability = lambda *a, **k: (9, 0)  # an H100's
    torch.Generator = _Generator
    torch.__future__.set_overwrite_module_params_on_conversion(True)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*CUDA is not available.*")
            warnings.filterwarnings("ignore", message=".*pin_memory.*")
            with mode:
                yield mode
    finally:
        for name, f in saved.items():
            setattr(torch.cuda, name, f)
        torch.Generator = generator
        torch.__future__.set_overwrite_module_params_on_conversion(overwrite)
