"""ember.amp: mixed precision, as torch.amp: ``autocast`` (a context manager) and ``GradScaler``."""
from ._C.amp import autocast, GradScaler, is_autocast_enabled  # noqa: F401
