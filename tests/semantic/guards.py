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
    files = ["a", "b", "c"]  # per-rank: no
    own = files[rank]  # per-rank: yes
    share = files[rank::world]  # per-rank: yes
    strided = files[::world]  # per-rank: no
    for day in range(rank, 10, world):
        day_path = f"day_{day}.npy"  # per-rank: yes
    for count in range(rank):
        count_path = f"count_{count}.npy"  # per-rank: no
    for step, item in enumerate(share):
        step_path = f"step_{step}.npy"  # per-rank: no
        item_path = f"{item}.npy"  # per-rank: yes
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
