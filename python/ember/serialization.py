"""Saving and loading tensors as safetensors files.

``save_file``/``load_file`` have the safetensors package's names; ``ember.save(state_dict, path)``
and ``ember.load(path)`` take a dict of tensors (a state dict) and write the same format, which
PyTorch's ``safetensors.torch.load_file`` reads (Ember does not pickle).
"""
from ._C.serialization import save_file, load_file  # noqa: F401


def save(obj, f):
    if not isinstance(obj, dict):
        raise TypeError("ember.save takes a dict of tensors (a state dict): Ember writes safetensors, not pickles")
    save_file(dict(obj), str(f))


def load(f, map_location=None):
    tensors = load_file(str(f))
    if map_location is not None:
        tensors = {k: v.to(map_location) for k, v in tensors.items()}
    return tensors
