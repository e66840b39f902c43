"""Ember from Python, with PyTorch's names: ``import ember`` where you wrote ``import torch``.

A thin layer over Ember's C++ library (the extension module ``ember._C``): tensors,
autograd, ``ember.nn``, ``ember.optim``, ``ember.utils.data``, ``ember.amp``. Every
operation runs in C++; this package only names things as PyTorch does.
docs/python.md describes it.
"""
import functools as _functools

from . import _C
from ._C import (Tensor, dtype, device, Error, DeviceError, DTypeError, ShapeError, IndexError, ValueError,
                 NotImplementedError, OutOfMemoryError, CudaError, FormatError, DistError,
                 zeros, ones, empty, full, rand, randn, arange, zeros_like, ones_like, empty_like,
                 tensor, from_numpy, as_tensor, manual_seed, is_grad_enabled, set_num_threads, get_num_threads,
                 set_cpu_memory_limit, cpu_memory_limit, cpu_memory_allocated,
                 matmul, cat, stack, where)

float32 = float = dtype.float32
float64 = double = dtype.float64
float16 = half = dtype.float16
bfloat16 = dtype.bfloat16
int8 = dtype.int8
uint8 = dtype.uint8
int32 = int = dtype.int32
int64 = long = dtype.int64
bool = dtype.bool

__version__ = "0.1.0"


class Parameter(Tensor):
    """A tensor that a Module registers as a parameter when assigned to one of its attributes.

    Like ``torch.nn.Parameter``: it shares the data of ``data`` and is a leaf that requires grad.
    """

    def __init__(self, data=None, requires_grad=True):
        super().__init__(zeros(0) if data is None else data.detach())
        self.requires_grad_(requires_grad)


class set_grad_enabled:
    """Turns gradient recording on or off for this thread, as a call or a ``with`` block."""

    def __init__(self, mode):
        self._prev = _C.is_grad_enabled()
        _C._set_grad_enabled(mode)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _C._set_grad_enabled(self._prev)
        return False


class _GradMode:
    _mode = None

    def __enter__(self):
        self._prev = _C.is_grad_enabled()
        _C._set_grad_enabled(self._mode)
        return self

    def __exit__(self, *exc):
        _C._set_grad_enabled(self._prev)
        return False

    def __call__(self, fn):
        @_functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with type(self)():
                return fn(*args, **kwargs)
        return wrapper


class no_grad(_GradMode):
    """Records nothing for backward inside ``with ember.no_grad():`` or a function decorated with it."""
    _mode = False


class enable_grad(_GradMode):
    """Turns recording back on inside a ``no_grad`` region."""
    _mode = True


inference_mode = no_grad


def _method_as_function(name):
    method = getattr(Tensor, name)

    def fn(input, *args, **kwargs):
        return method(input, *args, **kwargs)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"ember.{name}(input, ...) is input.{name}(...)."
    return fn


for _name in ["neg", "abs", "relu", "exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid", "add", "sub",
              "mul", "div", "pow", "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge", "sum", "mean", "var",
              "norm", "amax", "amin", "max", "min", "argmax", "argmin", "softmax", "log_softmax", "flatten",
              "reshape", "transpose", "permute", "squeeze", "unsqueeze", "clamp", "t", "clone", "narrow", "select",
              "detach"]:
    globals()[_name] = _method_as_function(_name)
del _name


def is_tensor(obj):
    return isinstance(obj, Tensor)


def numel(input):
    return input.numel()


from . import cuda, amp, nn, optim, utils, quantization, serialization, distributed  # noqa: E402
from .amp import autocast  # noqa: E402
from .serialization import save, load  # noqa: E402
from .nn import parallel as _parallel  # noqa: E402,F401  (ember.nn.parallel)
