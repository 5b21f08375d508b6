import torch
import torch.distributed as dist


def main(model):
    if not dist.is_initialized():
        torch.save(model.state_dict(), "model.pt")  # runs: single
        return
    dist.barrier()  # runs: all
    if dist.get_rank() == 0:
        torch.save(model.state_dict(), "model.pt")  # runs: one


if __name__ == "__main__":
    main(None)
