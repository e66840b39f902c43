"""ember.optim.lr_scheduler: StepLR (multiplies the learning rate by gamma every step_size epochs)."""
from .._C.optim import StepLR  # noqa: F401
