"""ember.cuda: whether CUDA is there (``is_available``), how many devices, and waiting for them."""
from . import _C


def is_available():
    return _C.cuda_is_available()


def device_count():
    return _C.cuda_device_count()


def synchronize(device=None):
    _C.cuda_synchronize(-1 if device is None else int(device))
