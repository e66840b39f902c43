"""ember.utils: ``ember.utils.data`` (DataLoader, TensorDataset, FashionMNIST)."""
from . import data  # noqa: F401
