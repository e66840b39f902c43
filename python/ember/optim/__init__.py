"""ember.optim: SGD, Adam and AdamW (nn/optim/optimizer.h) with torch.optim's arguments."""
from .._C.optim import Optimizer, SGD, Adam, AdamW  # noqa: F401
from . import lr_scheduler  # noqa: F401
