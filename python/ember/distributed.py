"""ember.distributed: data parallelism over MPI, as torch.distributed.

Launch with ``mpirun -np 2 python3 script.py``; each process calls
``init_process_group("mpi")``, wraps its model in ``DistributedDataParallel`` and
trains on its own share of the data (``DataLoader(..., num_replicas=world, rank=rank)``);
gradients are averaged during ``backward()``. docs/dist.md describes the C++ side.
"""
from ._C import distributed as _d

is_available = _d.is_available
if _d.is_available():
    ReduceOp = _d.ReduceOp
    init_process_group = _d.init_process_group
    is_initialized = _d.is_initialized
    destroy_process_group = _d.destroy_process_group
    get_rank = _d.get_rank
    get_world_size = _d.get_world_size
    all_reduce = _d.all_reduce
    broadcast = _d.broadcast
    barrier = _d.barrier
    DistributedDataParallel = _d.DistributedDataParallel
