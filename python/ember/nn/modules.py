"""Module for Python subclasses, and the layers.

``Module`` is the C++ ``nn::Module`` itself (``ember._C.nn.Module``): the built-in
layers are C++ subclasses of it, and a Python subclass becomes one too. What this
file adds, for Python subclasses only, is what PyTorch's ``nn.Module`` does in
Python: assigning a Module or a Parameter to an attribute registers it under that
name (so ``named_parameters()`` gives ``conv1.weight``), and calling the module
calls its Python ``forward`` with whatever arguments it takes. Everything else
(parameters, state_dict, to, train/eval, zero_grad, repr) is the C++ Module's.
"""
from .. import _C, Parameter
from . import functional as F

Module = _C.nn.Module
Linear = _C.nn.Linear
Conv2d = _C.nn.Conv2d
BatchNorm2d = _C.nn.BatchNorm2d
ReLU = _C.nn.ReLU
Flatten = _C.nn.Flatten
MaxPool2d = _C.nn.MaxPool2d
AvgPool2d = _C.nn.AvgPool2d
Dropout = _C.nn.Dropout
Network = _C.nn.Network

_c_init = Module.__init__


def _module_init(self, *args, **kwargs):
    # super().__init__() in a Python subclass: the C++ Module, named after the class (its repr).
    _c_init(self, type(self).__name__)


def _module_setattr(self, name, value):
    if isinstance(value, Parameter):
        self.register_parameter(name, value)
    elif isinstance(value, Module):
        if any(n == name for n, _ in self.named_children()):
            self._replace_module(name, value)
        else:
            self.add_module(name, value)
    # The attribute itself also holds the Python object, which keeps a child
    # written in Python (and so its forward) alive as long as its parent.
    object.__setattr__(self, name, value)


def _module_call(self, *args, **kwargs):
    return self.forward(*args, **kwargs)


def _module_init_subclass(cls, **kwargs):
    # Runs for every Python subclass (never for the C++ layers, which are not Python classes).
    for name, fn in (("__setattr__", _module_setattr), ("__call__", _module_call)):
        if name not in cls.__dict__:
            setattr(cls, name, fn)


def _module_apply(self, fn):
    """Calls fn on every submodule (children first) and then on this module, as PyTorch's apply."""
    for _, child in self.named_children():
        child.apply(fn)
    fn(self)
    return self


def _module_requires_grad_(self, requires_grad=True):
    for p in self.parameters():
        p.requires_grad_(requires_grad)
    return self


Module.__init__ = _module_init
Module.__init_subclass__ = classmethod(_module_init_subclass)
Module.apply = _module_apply
Module.requires_grad_ = _module_requires_grad_


class ModuleList(Module):
    """Holds modules in a list, registered as "0", "1", ... (torch.nn.ModuleList)."""

    def __init__(self, modules=None):
        super().__init__()
        object.__setattr__(self, "_list", [])
        for m in modules or []:
            self.append(m)

    def append(self, module):
        self.add_module(str(len(self._list)), module)
        self._list.append(module)  # also keeps a module written in Python alive
        return self

    def extend(self, modules):
        for m in modules:
            self.append(m)
        return self

    def __getitem__(self, index):
        return self._list[index]

    def __len__(self):
        return len(self._list)

    def __iter__(self):
        return iter(self._list)


class Sequential(_C.nn.Sequential):
    """Runs its modules in order; children are named "0", "1", ... (``nn::Sequential``)."""

    def __init__(self, *modules):
        super().__init__()
        for m in modules:
            self.append(m)

    __call__ = _C.nn.Module.__call__


class _Activation(Module):
    """A layer that applies one function of ``ember.nn.functional`` (no parameters)."""
    _fn = None

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return type(self)._fn(input)


class Sigmoid(_Activation):
    _fn = staticmethod(F.sigmoid)


class Tanh(_Activation):
    _fn = staticmethod(F.tanh)


class GELU(_Activation):
    _fn = staticmethod(F.gelu)


class Identity(_Activation):
    _fn = staticmethod(lambda x: x)


class Softmax(Module):
    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.softmax(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class LogSoftmax(Softmax):
    def forward(self, input):
        return F.log_softmax(input, self.dim)


class CrossEntropyLoss(Module):
    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                 label_smoothing=0.0):
        super().__init__()
        self._args = dict(weight=weight, ignore_index=ignore_index, reduction=reduction,
                          label_smoothing=label_smoothing)

    def forward(self, input, target):
        return F.cross_entropy(input, target, **self._args)


class NLLLoss(Module):
    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
        super().__init__()
        self._args = dict(weight=weight, ignore_index=ignore_index, reduction=reduction)

    def forward(self, input, target):
        return F.nll_loss(input, target, **self._args)


class MSELoss(Module):
    def __init__(self, size_average=None, reduce=None, reduction="mean"):
        super().__init__()
        self._reduction = reduction

    def forward(self, input, target):
        return F.mse_loss(input, target, reduction=self._reduction)
