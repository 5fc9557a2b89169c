"""One rank of test_distributed.py: DDP over gloo on the cpu, a small model of
dwconv layers, this rank's half of the batch; saves the averaged gradients.
Usage: ddp_worker.py RANK WORLD_SIZE STORE_FILE OUT_FILE"""
import sys

import torch
import torch.distributed as dist

import ddp_model


def main(rank, world, store, out):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world)
    model = torch.nn.parallel.DistributedDataParallel(ddp_model.model())
    x, target = ddp_model.batch()
    part = x.shape[0] // world
    rows = slice(rank * part, (rank + 1) * part)
    # DDP averages the ranks' gradients: each rank's loss is scaled by world so that the
    # average is the gradient of the whole batch's loss
    (ddp_model.loss(model(x[rows]), target[rows]) * world).backward()
    torch.save([p.grad for p in model.module.parameters()], out)
    dist.destroy_process_group()


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4])
