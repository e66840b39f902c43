"""ember.quantization: int8 dynamic quantization of Linear layers (torch.ao.quantization.quantize_dynamic)."""
from ._C.quantization import quantize_dynamic, DynamicQuantizedLinear  # noqa: F401
