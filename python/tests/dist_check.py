# Run under `mpirun -np 2` by the python suite (not collected by pytest: its name
# does not start with test_). Each rank checks ember.distributed's collectives and
# that DistributedDataParallel over a Python Module averages gradients: after
# backward every rank holds the same gradient, the mean of what each rank's local
# copy computes on its own data.
import sys

import ember
import ember.distributed as dist
import ember.nn as nn
import ember.nn.functional as F


class Small(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(in_features=4, out_features=8)
        self.fc2 = nn.Linear(in_features=8, out_features=3)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def main():
    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    assert world == 2, world

    t = ember.tensor([float(rank + 1)])
    dist.all_reduce(t)
    assert t.item() == 3.0, t
    b = ember.tensor([float(rank * 10)])
    dist.broadcast(b, src=1)
    assert b.item() == 10.0, b

    ember.manual_seed(rank)  # different initial weights: DDP broadcasts rank 0's
    model = Small()
    ddp = dist.DistributedDataParallel(model)
    assert ddp.module is model
    local = Small()
    local.load_state_dict(model.state_dict())  # rank 0's weights, as DDP made them

    ember.manual_seed(100 + rank)  # each rank its own batch
    x = ember.randn(6, 4)
    y = ember.tensor([0, 1, 2, 0, 1, 2])
    F.cross_entropy(ddp(x), y).backward()
    F.cross_entropy(local(x), y).backward()
    for (name, p), (_, q) in zip(model.named_parameters(), local.named_parameters()):
        mean = q.grad.clone()
        dist.all_reduce(mean, dist.ReduceOp.AVG)
        assert (p.grad - mean).abs().max().item() < 1e-6, name
        top = p.grad.clone()
        dist.all_reduce(top, dist.ReduceOp.MAX)
        assert (top - p.grad).abs().max().item() == 0, name
    dist.barrier()
    print(f"rank {rank}: ember.distributed OK")


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # a failed rank must not leave the other waiting forever
        print(f"rank failed: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)
