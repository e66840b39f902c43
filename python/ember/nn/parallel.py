"""ember.nn.parallel: DistributedDataParallel under PyTorch's other name for it (see ember.distributed)."""
from .. import distributed as _distributed

if _distributed.is_available():
    DistributedDataParallel = _distributed.DistributedDataParallel
