"""The rules' claims, checked against real PyTorch (CPU build, a test dependency).

DDP014 must flag exactly the DataLoader calls that make PyTorch raise
ValueError; DDP012 must flag exactly the calls that emit PyTorch's
deprecation FutureWarning.
"""

from __future__ import annotations

import sys
import textwrap
import types
import warnings

import pytest

from ddplint import lint_source

torch = pytest.importorskip("torch")

LOADER_PRELUDE = textwrap.dedent(
    """
    import torch
    from torch.utils.data import (
        BatchSampler, DataLoader, IterableDataset, IterDataPipe, RandomSampler,
        SequentialSampler, TensorDataset,
    )

    class Stream(IterableDataset):
        def __iter__(self):
            yield from range(4)

    class SubStream(Stream):
        pass

    class Pipe(IterDataPipe):
        def __iter__(self):
            yield from range(4)

    ds = TensorDataset(torch.arange(8))
    batches = BatchSampler(SequentialSampler(ds), 2, False)
    """
)

LOADER_CALLS = [
    "DataLoader(ds, sampler=SequentialSampler(ds), shuffle=True)",
    "DataLoader(ds, sampler=SequentialSampler(ds), shuffle=1)",
    "DataLoader(ds, sampler=SequentialSampler(ds), shuffle=False)",
    "DataLoader(ds, sampler=SequentialSampler(ds))",
    "DataLoader(ds, sampler=None, shuffle=True)",
    "DataLoader(ds, shuffle=True)",
    "DataLoader(ds, 4, True, RandomSampler(ds))",
    "DataLoader(ds, 4, False, RandomSampler(ds))",
    "DataLoader(ds, batch_sampler=batches)",
    "DataLoader(ds, batch_sampler=batches, batch_size=1)",
    "DataLoader(ds, batch_sampler=batches, batch_size=2)",
    "DataLoader(ds, batch_sampler=batches, batch_size=None)",
    "DataLoader(ds, batch_sampler=batches, shuffle=True)",
    "DataLoader(ds, batch_sampler=batches, shuffle=False)",
    "DataLoader(ds, batch_sampler=batches, drop_last=True)",
    "DataLoader(ds, batch_sampler=batches, drop_last=False)",
    "DataLoader(ds, batch_sampler=batches, sampler=SequentialSampler(ds))",
    "DataLoader(ds, batch_sampler=None, batch_size=4, shuffle=True)",
    "DataLoader(Stream(), shuffle=True)",
    "DataLoader(Stream(), shuffle=False)",
    "DataLoader(Stream(), shuffle=None)",
    "DataLoader(Stream())",
    "DataLoader(SubStream(), shuffle=True)",
    "DataLoader(Stream(), sampler=SequentialSampler(ds))",
    "DataLoader(Stream(), batch_sampler=batches)",
    "DataLoader(Pipe(), shuffle=True)",
    "DataLoader(Pipe(), sampler=SequentialSampler(ds))",
    "torch.utils.data.DataLoader(ds, sampler=SequentialSampler(ds), shuffle=True)",
]


@pytest.mark.parametrize("call", LOADER_CALLS)
def test_ddp014_flags_exactly_what_pytorch_rejects(call: str) -> None:
    source = LOADER_PRELUDE + f"loader = {call}\n"
    flagged = any(f.rule == "DDP014" for f in lint_source("t.py", source))
    module = types.ModuleType("ddp014_probe")  # DataPipes pickle their class by module
    sys.modules[module.__name__] = module
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exec(compile(source, "t.py", "exec"), module.__dict__)
    except ValueError:
        raised = True
    else:
        raised = False
    finally:
        del sys.modules[module.__name__]
    assert flagged == raised, f"ddplint {'flags' if flagged else 'accepts'}, torch {'raises' if raised else 'accepts'}"


AMP_CALLS = [
    ("torch.cuda.amp.GradScaler(enabled=False)", True),
    ("torch.cpu.amp.GradScaler(enabled=False)", True),
    ("torch.cuda.amp.autocast(enabled=False)", True),
    ("torch.cpu.amp.autocast(enabled=False)", True),
    ("torch.cuda.amp.custom_fwd(lambda ctx, x: x)", True),
    ("torch.cuda.amp.custom_bwd(lambda ctx, g: g)", True),
    ("torch.amp.GradScaler('cuda', enabled=False)", False),
    ("torch.amp.autocast('cpu', enabled=False)", False),
    ("torch.autocast('cpu', enabled=False)", False),
    ("torch.amp.custom_fwd(lambda ctx, x: x, device_type='cuda')", False),
]


@pytest.mark.parametrize(("call", "deprecated"), AMP_CALLS)
def test_ddp012_flags_exactly_what_pytorch_deprecates(call: str, deprecated: bool) -> None:
    source = f"import torch\nvalue = {call}\n"
    flagged = any(f.rule == "DDP012" for f in lint_source("t.py", source))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        exec(compile(source, "t.py", "exec"), {})
    warned = any(issubclass(w.category, FutureWarning) and "deprecated" in str(w.message) for w in caught)
    assert warned is deprecated, "the table is wrong about PyTorch"
    assert flagged is deprecated
