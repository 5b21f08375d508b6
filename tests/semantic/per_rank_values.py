import math

import torch
import torch.distributed as dist
import torch.nn.functional as F

from helpers import validate


def reduce_mean(tensor):
    tensor = tensor.clone()
    dist.all_reduce(tensor)
    return tensor / dist.get_world_size()


def local_mean(model, loader):
    return sum(F.cross_entropy(model(x), y).item() for x, y in loader) / len(loader)


def shared_mean(model, loader):
    total = torch.tensor(local_mean(model, loader))
    dist.all_reduce(total)
    return total.item()


def main(model, loader, criterion, stopper, meter, max_steps):
    best_loss = float("inf")  # unreduced: no
    for step, (x, y) in enumerate(loader):
        loss = criterion(model(x), y)  # unreduced: yes
        if torch.isnan(loss):  # unreduced: yes
            break
        reduced = reduce_mean(loss.detach())  # unreduced: no
        if torch.isnan(reduced):  # unreduced: no
            break
        if step >= max_steps:  # unreduced: no
            break
        val_loss = local_mean(model, loader)  # unreduced: yes
        if val_loss < best_loss:  # unreduced: yes
            best_loss = val_loss
        shared = shared_mean(model, loader)  # unreduced: no
        if shared < 0.1:  # unreduced: no
            break
        acc = validate(model, loader)  # unreduced: no
        if acc > 0.9:  # unreduced: no
            break
        stopper(val_loss)
        if stopper.early_stop:  # unreduced: yes
            break
        meter.update(loss.item())
        meter.synchronize_between_processes()
        if meter.avg < 0.1:  # unreduced: no
            break
        epoch_loss = torch.tensor(loss.item())
        dist.all_reduce(epoch_loss)
        if epoch_loss.item() < 0.01:  # unreduced: no
            break
        epoch_mean = float(epoch_loss.item())  # unreduced: no
        step_mean = float(loss.item())  # unreduced: yes
        if math.isinf(loss.item()):  # unreduced: yes
            break
