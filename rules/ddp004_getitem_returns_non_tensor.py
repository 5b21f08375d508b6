"""DDP004 getitem-returns-non-tensor."""

from __future__ import annotations

from ddplint.analysis.data import enclosing_class
from ddplint.analysis.samples import Shape, harmful_returns
from ddplint.lazy import cst
from ddplint.model import Severity
from ddplint.rule import Rule

#: What the default collate does with each shape, and the fix.
CONSEQUENCES = {
    Shape.PIL: (
        "`default_collate` raises `TypeError` on the first batch (it batches tensors, NumPy arrays, numbers, "
        "strings, dicts and sequences only)",
        "end the transform chain with `ToTensor()`/`PILToTensor()`",
    ),
    Shape.NONE: (
        "`default_collate` raises `TypeError` on the first batch that holds one",
        "skip the bad sample in the dataset, or drop `None`s in a `collate_fn` before calling `default_collate`",
    ),
    Shape.RAGGED: (
        "`torch.stack` in `default_collate` raises `RuntimeError` on the first batch with two lengths",
        "pad/truncate to a fixed length, or pass a padding `collate_fn` (`pad_sequence`)",
    ),
    Shape.FLAT: (
        "`default_collate` silently transposes it into one tensor per position (a list of `[batch]` tensors, "
        "not a `[batch, n]` tensor)",
        "return `torch.tensor([...])`",
    ),
    Shape.OBJECT: (
        "`default_collate` raises `TypeError` on the first batch (torch has no object dtype)",
        "convert to a numeric dtype or a tensor, or collate it yourself in a `collate_fn`",
    ),
}


class GetitemReturnsNonTensor(Rule):
    """
    ## What it does

    Flags a `return` in `__getitem__` of a map-style `torch.utils.data.
    Dataset` that returns something plainly not a tensor: a NumPy array
    (`np.array`, `np.asarray`, `np.load`, `cv2.imread`, `x.numpy()`, ...), a
    `str`/`bytes` payload (a literal or f-string, `str(...)`, `.decode()`,
    `f.read()`), or a tuple/list/dict holding one (`return img_np, label`,
    `return {"image": image.astype(np.float32), "label": self.labels[i]}`).
    A NumPy leaf is enough: `.astype`/`.transpose`/`.reshape`, arithmetic
    on an array and NumPy scalars (`np.int64(label)`) stay NumPy, and
    unknown values beside it do not hide it. Local assignments in
    `__getitem__` are followed. Not flagged: tensors and structures holding
    a tensor (`return image_tensor, label, path`), numbers alone, and
    anything unknown alone (`self.transform(img)`, `self.samples[idx]`).

    **Preview** (`--preview`): on the training repositories of the ecosystem
    check no finding was one a maintainer would fix, because the default
    `collate_fn` converts NumPy arrays to tensors inside the worker; the cost
    is real only with a custom `collate_fn` that keeps them, or
    `batch_size=None`.

    ## Why is this bad?

    A DataLoader worker sends each batch to the main process through a
    result queue. Tensors in the batch travel through shared memory, and
    the default collate function turns NumPy arrays into tensors first; but
    anything that stays a Python object (all of the sample with a custom
    `collate_fn` that does not convert, strings and bytes always) is pickled
    and copied through the pipe, once per sample, which costs CPU time and
    memory in every worker and in the main process. Returning tensors
    (`torch.from_numpy(array)`, `torch.as_tensor(...)`) lets the DataLoader's
    shared-memory transfer do the work, and keeps the training loop from
    converting on the main process.

    ## Example

    ```python
    class Images(Dataset):
        def __getitem__(self, index):
            image = np.asarray(Image.open(self.paths[index]).convert("RGB"))
            return image, self.labels[index]
    ```

    ## Use instead

    ```python
    class Images(Dataset):
        def __getitem__(self, index):
            image = np.asarray(Image.open(self.paths[index]).convert("RGB"))
            return torch.from_numpy(image).permute(2, 0, 1), self.labels[index]
    ```

    ## Fix safety

    No automatic fix: converting a returned value (`torch.from_numpy`,
    `torch.tensor`) needs its dtype and whether it shares memory, which only
    the author knows.

    ## References

    - [torch.utils.data: memory pinning and multi-process loading](https://pytorch.org/docs/stable/data.html#multi-process-data-loading)
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
            happens, fix = CONSEQUENCES[shape]
            self.report(
                statement,
                f"`{classdef.name.value}.__getitem__` returns {shape.value} and a DataLoader batches it with the "
                f"default collate: {happens}; {fix}",
                statement=statement,
            )
