import numpy as np
import torch
import torch.distributed as dist
from torch import tensor as make


def counters(values, local_rank):
    total = torch.zeros(3)  # on-cpu: yes
    on_gpu = torch.zeros(3, device=f"cuda:{local_rank}")  # on-cpu: no
    named_cpu = torch.ones(2, device="cpu")  # on-cpu: yes
    as_device = torch.ones(2, device=torch.device("cpu"))  # on-cpu: yes
    aliased = make([1.0, 2.0])  # on-cpu: yes
    from_numbers = torch.from_numpy(np.asarray(values))  # on-cpu: yes
    moved = total.cuda()  # on-cpu: no
    moved_back = on_gpu.cpu()  # on-cpu: yes
    to_cpu = on_gpu.to("cpu")  # on-cpu: yes
    to_rank = total.to(local_rank)  # on-cpu: no
    retyped = total.to(torch.float64)  # on-cpu: yes
    converted = total.float().clone()  # on-cpu: yes
    scaled = total * 2 + len(values)  # on-cpu: yes
    mixed = total + on_gpu  # on-cpu: no
    alike = torch.zeros_like(total)  # on-cpu: yes
    alike_gpu = torch.zeros_like(on_gpu)  # on-cpu: no
    stacked = torch.stack([total, moved_back])  # on-cpu: yes
    stacked_mixed = torch.stack([total, on_gpu])  # on-cpu: no
    count = len(values)
    count += 1
    per_count = torch.zeros(1) / count  # on-cpu: yes
    unknown = values[0]  # on-cpu: no
    dist.all_reduce(total)
    return scaled, mixed, alike, alike_gpu, stacked, stacked_mixed, converted, retyped, to_rank, to_cpu, per_count


def accumulate(batches):
    running = torch.tensor(0.0)
    for batch in batches:
        running += batch.sum().item()
    result = running  # on-cpu: yes
    return result

