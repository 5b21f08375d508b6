import os

import torch
import torch.distributed as dist


def main():
    dist.init_process_group("nccl")  # runs: all
    rank = dist.get_rank()  # per-rank: yes
    world = dist.get_world_size()  # per-rank: no
    local_rank = int(os.environ["LOCAL_RANK"])  # per-rank: yes
    path = f"ckpt_{rank}.pt"  # per-rank: yes
    name = "ckpt.pt"  # per-rank: no
    if rank == 0:
        torch.save({}, name)  # runs: one
    else:
        print("waiting")  # runs: all-but-one
    if local_rank == 0:
        print("node leader")  # runs: per-node
    if rank in (1, 3):
        print("some")  # runs: some
    if rank != 0:
        return
    print("after the early exit")  # runs: one


if __name__ == "__main__":
    main()
