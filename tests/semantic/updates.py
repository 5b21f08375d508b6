import enum
import os

import torch.distributed as dist


class Kind(enum.Enum):
    LEGACY = 1
    GLOBAL = 2


def main(args, kind):
    dist.init_process_group("nccl")  # runs: all
    local_rank = int(os.environ["LOCAL_RANK"])
    args.seed += local_rank
    seed = args.seed  # per-rank: yes
    if kind != Kind.LEGACY or local_rank == 0:
        if kind == Kind.GLOBAL:
            print("every rank is here")  # runs: all
        print("the writers")  # runs: some
    return seed


if __name__ == "__main__":
    main(None, Kind.GLOBAL)
