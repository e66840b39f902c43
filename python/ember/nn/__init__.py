"""ember.nn: Module (subclass it as in PyTorch), the layers, and ``ember.nn.functional``."""
from .modules import (Module, Parameter, Linear, Conv2d, BatchNorm2d, ReLU, Flatten, MaxPool2d, AvgPool2d,  # noqa: F401
                      Dropout, Sequential, Network, Sigmoid, Tanh, GELU, Softmax, LogSoftmax, CrossEntropyLoss,
                      NLLLoss, MSELoss, Identity, ModuleList)
from . import functional  # noqa: F401
from .._C.nn import init  # noqa: F401
from .. import _C as _C_root

utils = _C_root.utils
