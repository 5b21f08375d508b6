"""DDP004's claims about the default collate, checked against real PyTorch (CPU).

Each dataset below is linted and then loaded by the very DataLoader the
source builds: every `return` DDP004 reports makes `default_collate` raise
the error its message names (or, for a flat list of numbers, transpose the
sample), and the look-alikes it leaves alone batch as expected.
"""

from __future__ import annotations

import textwrap
import types

import pytest

from ddplint import lint_source

torch = pytest.importorskip("torch")
pytest.importorskip("PIL")

SOURCE = textwrap.dedent(
    """
    import torch
    from PIL import Image
    from torch.nn.utils.rnn import pad_sequence
    from torch.utils.data import DataLoader, Dataset, default_collate

    TEXTS = ["one two", "one two three", "one", "one two three four"]


    class Pictures(Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            picture = Image.new("RGB", (8, 8), color=(i, i, i))
            return picture.convert("L"), i  # PIL


    class Gappy(Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            if i == 2:
                return None  # NONE
            return torch.zeros(3)


    class Words(Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            return torch.tensor([len(word) for word in TEXTS[i].split()])  # RAGGED


    class Box(Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            return [float(i), 1.0, 2.0, 3.0]  # FLAT


    class PaddedWords(Words):
        pass


    def pad(batch):
        return pad_sequence(batch, batch_first=True)


    def drop_none(batch):
        return default_collate([sample for sample in batch if sample is not None])


    LOADERS = {
        "PIL": DataLoader(Pictures(), batch_size=4),
        "NONE": DataLoader(Gappy(), batch_size=4),
        "RAGGED": DataLoader(Words(), batch_size=4),
        "FLAT": DataLoader(Box(), batch_size=4),
        "padded": DataLoader(PaddedWords(), batch_size=4, collate_fn=pad),
        "filtered": DataLoader(Gappy(), batch_size=4, collate_fn=drop_none),
        "unbatched": DataLoader(Pictures(), batch_size=None),
    }
    """
)
#: Object arrays fail, other NumPy arrays are converted (numpy is optional beside torch).
NUMPY_SOURCE = textwrap.dedent(
    """
    import numpy as np
    from torch.utils.data import DataLoader, Dataset


    class Mixed(Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            return np.array([np.zeros(i + 1), "label"], dtype=object)  # OBJECT


    class Arrays(Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            return np.full((2, 2), i, dtype=np.float32), "name"


    LOADERS = {"OBJECT": DataLoader(Mixed(), batch_size=4), "arrays": DataLoader(Arrays(), batch_size=4)}
    """
)


def _loaders(source: str) -> dict:
    module = types.ModuleType("collate_rationale")
    exec(compile(source, "collate_rationale.py", "exec"), module.__dict__)
    return module.LOADERS


@pytest.fixture(scope="module")
def loaders() -> dict:
    return _loaders(SOURCE)


@pytest.fixture(scope="module")
def numpy_loaders() -> dict:
    pytest.importorskip("numpy")
    return _loaders(NUMPY_SOURCE)


def _marked(source: str) -> dict[int, str]:
    return {n: text.rsplit("# ", 1)[1] for n, text in enumerate(source.splitlines(), 1) if text.endswith(("# PIL", "# NONE", "# RAGGED", "# FLAT", "# OBJECT"))}


@pytest.mark.parametrize("source", [SOURCE, NUMPY_SOURCE], ids=["torch", "numpy"])
def test_ddp004_reports_exactly_the_marked_returns(source: str) -> None:
    found = {f.span.line for f in lint_source("collate_rationale.py", source) if f.rule == "DDP004"}
    assert found == set(_marked(source))


@pytest.mark.parametrize(("marker", "error", "words"), [
    ("PIL", TypeError, "PIL"),
    ("NONE", TypeError, "NoneType"),
    ("RAGGED", RuntimeError, "stack expects each tensor to be equal size"),
])  # fmt: skip
def test_default_collate_raises_on_the_first_batch(loaders, marker, error, words) -> None:
    with pytest.raises(error, match=words):
        next(iter(loaders[marker]))


def test_default_collate_raises_on_an_object_array(numpy_loaders) -> None:
    with pytest.raises(TypeError, match="object"):
        next(iter(numpy_loaders["OBJECT"]))


def test_default_collate_transposes_a_flat_list_of_numbers(loaders) -> None:
    batch = next(iter(loaders["FLAT"]))
    assert isinstance(batch, list) and len(batch) == 4  # one tensor per position ...
    assert all(t.shape == (4,) for t in batch)  # ... each of batch size, not one [4, 4] tensor
    assert batch[0].tolist() == [0.0, 1.0, 2.0, 3.0]


def test_the_look_alikes_batch(loaders) -> None:
    assert next(iter(loaders["padded"])).shape == (4, 4)
    assert next(iter(loaders["filtered"])).shape == (3, 3)
    picture, index = next(iter(loaders["unbatched"]))
    assert type(picture).__module__.startswith("PIL") and index == 0


def test_numpy_arrays_are_converted(numpy_loaders) -> None:
    arrays, names = next(iter(numpy_loaders["arrays"]))
    assert isinstance(arrays, torch.Tensor) and arrays.shape == (4, 2, 2) and list(names) == ["name"] * 4
