import torch
import torch.distributed as dist


def save(state):
    torch.save(state, "last.pt")  # runs: one


def log(message):
    print(message)  # runs: all


def helper_nobody_calls():
    print("who knows")  # runs: unknown


def train(model, loader, opt):
    dist.init_process_group("gloo")
    for batch in loader:
        loss = model(batch).sum()  # repeated: yes
        loss.backward()
        opt.step()
        log(loss.item())  # runs: all
    if dist.get_rank() == 0:
        save(model.state_dict())  # runs: one
    log("done")  # repeated: no


if __name__ == "__main__":
    train(None, [], None)
