import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def worker(rank, world_size):
    dist.init_process_group("gloo", rank=rank, world_size=world_size)  # runs: all
    torch.manual_seed(rank)  # runs: all


def main():
    torch.manual_seed(0)  # runs: launcher
    mp.spawn(worker, args=(4,), nprocs=4)  # runs: launcher


if __name__ == "__main__":
    main()
