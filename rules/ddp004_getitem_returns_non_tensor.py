"""DDP004 getitem-returns-non-tensor."""

from __future__ import annotations

from ddplint.analysis.data import enclosing_class
from ddplint.analysis.samples import Shape, harmful_returns
from ddplint.lazy import cst
from ddplint.model import Severity
from ddplint.rule import Rule

class GetitemReturnsNonTensor(Rule):
    """
    ## What it does

    Flags a `return` in `__getitem__` of a map-style Dataset whose sample
    the default collate function cannot batch, where a DataLoader of the
    module batches that dataset with it (no `collate_fn`, or
    `collate_fn=None`/`default_collate`, and a `batch_size` that is not
    `None`). The shapes:

    - a PIL image: `Image.open(...)`, `.convert(...)`, `.resize(...)`, also
      after PIL-only torchvision transforms (flips, crops, `Resize`,
      `ColorJitter`, ... alone or in a `Compose` without `ToTensor`/
      `PILToTensor`) and `transforms.functional` calls;
    - `None` (a bad-sample path), written in the return or returned by a
      helper the return calls;
    - a tensor or list whose length is the sample's own: the words of a
      whitespace `split()`, tokenizer output with no `padding="max_length"`
      (`padding=True` pads one text to itself);
    - a flat Python list of numbers (`[x, y, w, h]`, `[float(v) for v in row]`);
    - a NumPy array of `dtype=object`.

    Values are followed through local assignments in source order, module
    names, `self.` attributes and the helpers and methods the return calls;
    the dataset is followed into the DataLoader through names, parameters,
    attributes, helper returns, `Subset` and module subclasses that inherit
    `__getitem__`. NumPy arrays, numbers, strings and dicts of them are not
    flagged (the default collate converts them), nor anything unknown (a
    transform passed in as a parameter), nor a dataset no DataLoader of the
    module loads: a dataset batched in another module, by a `collate_fn`
    there, is not reported (on the training repositories of the ecosystem
    check, datasets without a visible DataLoader were storage readers that
    never reach one).

    ## Why is this bad?

    `default_collate` batches tensors, NumPy arrays, numbers, strings and
    dicts/sequences of them. A PIL image, `None` or an object array makes it
    raise `TypeError` on the first batch that holds one; sequences of two
    lengths make `torch.stack` raise `RuntimeError`. That happens after the
    job has been queued, started on every rank and loaded its data, and a
    `None` path may only fail hours in, on the first bad record. A flat list
    of numbers fails nothing: the collate transposes it into one `[batch]`
    tensor per position instead of one `[batch, n]` tensor.

    ## Example

    ```python
    class Leaves(Dataset):
        def __init__(self, files):
            self.files = files
            self.flip = torchvision.transforms.RandomHorizontalFlip()

        def __getitem__(self, i):
            leaf = Image.open(self.files[i])
            return self.flip(leaf)  # a PIL image


    loader = DataLoader(Leaves(files), batch_size=16)
    ```

    ## Use instead

    ```python
    class Leaves(Dataset):
        def __init__(self, files):
            self.files = files
            self.flip = torchvision.transforms.RandomHorizontalFlip()

        def __getitem__(self, i):
            leaf = Image.open(self.files[i]).convert("RGB")
            return torchvision.transforms.ToTensor()(self.flip(leaf))
    ```

    Pad sequences in a `collate_fn` (`pad_sequence`) or to a fixed length
    in the tokenizer (`padding="max_length", truncation=True`); drop `None`
    samples in a `collate_fn` before calling `default_collate`; return
    `torch.tensor([...])` for a vector.

    ## Fix safety

    No automatic fix: the right conversion (`ToTensor` and its scaling, the
    padding value, what to do with a bad sample) is the author's choice.

    ## References

    - [torch.utils.data: automatic batching and `collate_fn`](https://pytorch.org/docs/stable/data.html#dataloader-collate-fn)
    - [`torch.utils.data.default_collate`](https://pytorch.org/docs/stable/data.html#torch.utils.data.default_collate)
    """

    code = "DDP004"
    name = "getitem-returns-non-tensor"
    severity = Severity.ERROR
    summary = "Dataset __getitem__ returns a sample the default collate cannot batch (PIL image, None, ragged, flat list)."
    tokens = ("__getitem__",)
    requires = frozenset({"data"})
    tags = ("correctness", "data-loading")

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.found: list[tuple[cst.ClassDef, cst.Return, Shape]] = []

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        classdef = enclosing_class(self.ctx)
        if node.name.value == "__getitem__" and classdef is not None:
            self.found += [(classdef, ret, shape) for ret, shape in harmful_returns(node, self.ctx)]

    def finish(self) -> None:
        for classdef, statement, shape in self.found:
            if self.ctx.data.kind(classdef) != "map" or not self.ctx.data.default_collated(classdef):
                continue
            self.report(
                statement,
                f"`{classdef.name.value}.__getitem__` returns {shape.value} and a DataLoader batches it with the "
                f"default collate: {shape.collated}; {shape.remedy}",
                statement=statement,
            )
