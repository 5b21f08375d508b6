import threading

import torch
import torch.distributed as dist

HOOKS = []


def on_main(work, label="job"):
    if dist.get_rank() == 0:
        print(label)  # runs: one
        work()  # runs: one


def on_others(*, job):
    if dist.get_rank() != 0:
        job()  # runs: all-but-one


def kept(work):
    HOOKS.append(work)
    if dist.get_rank() == 0:
        work()


def threaded(work):
    threading.Thread(target=work).start()


def deferred(work):
    if dist.get_rank() == 0:
        HOOKS.append(lambda: work())  # the hooks run it, wherever they run


def export():
    torch.save({}, "export.pt")  # runs: one


def receive():
    print("received")  # runs: all-but-one


def both():
    torch.save({}, "both.pt")  # runs: all


def stored():
    torch.save({}, "stored.pt")  # runs: all


def in_thread():
    torch.save({}, "thread.pt")  # runs: all


def later():
    torch.save({}, "later.pt")  # runs: all


def main(out):
    dist.init_process_group("gloo")

    def export_nested():
        torch.save({}, out)  # runs: one

    on_main(export)
    on_main(export_nested, label="nested")
    on_others(job=receive)
    on_main(both)
    both()
    kept(stored)
    threaded(in_thread)
    deferred(later)


if __name__ == "__main__":
    main("x.pt")
