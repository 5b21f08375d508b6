"""A small torchrun training script with the bugs ddplint exists to catch.

Run `ddplint examples/` to see them; `train_ddp_fixed.py` is the same script
done right. Launch (it would train, and then fail on the cluster):

    torchrun --nproc-per-node 2 examples/train_ddp.py
"""

import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler


class RandomImages(Dataset):
    def __init__(self, n=1024):
        self.images = torch.randn(n, 3, 32, 32)
        self.labels = torch.randint(0, 10, (n,))

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, index):
        return self.images[index], self.labels[index]


def main():
    dist.init_process_group(backend="nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    torch.manual_seed(0)

    dataset = RandomImages()
    sampler = DistributedSampler(dataset)
    # Bug: sampler= and shuffle=True together raise ValueError at start-up.
    loader = DataLoader(dataset, batch_size=64, shuffle=True, sampler=sampler, num_workers=4)

    model = DDP(nn.Sequential(nn.Flatten(), nn.Linear(3 * 32 * 32, 10)).cuda(), device_ids=[local_rank])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.cuda.amp.GradScaler()  # Deprecated: torch.amp.GradScaler("cuda")

    for epoch in range(3):
        for images, labels in loader:
            optimizer.zero_grad()
            with torch.cuda.amp.autocast():  # Deprecated: torch.amp.autocast("cuda")
                loss = nn.functional.cross_entropy(model(images.cuda()), labels.cuda())
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        if dist.get_rank() == 0:
            torch.save(model.module.state_dict(), f"checkpoint_{epoch}.pt")
            dist.barrier()  # Bug: only rank 0 waits here; the job hangs.

    dist.destroy_process_group()


if __name__ == "__main__":
    main()
