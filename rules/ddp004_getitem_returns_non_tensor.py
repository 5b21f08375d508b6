"""DDP004 getitem-returns-non-tensor."""

from __future__ import annotations

import enum

from ddplint.analysis.data import enclosing_class
from ddplint.analysis.names import last_name
from ddplint.analysis.tree import descendants
from ddplint.lazy import cst
from ddplint.model import Severity
from ddplint.rule import Rule

NUMPY_CONSTRUCTORS = frozenset(
    f"numpy.{name}"
    for name in (
        "array", "asarray", "ascontiguousarray", "zeros", "ones", "empty", "full", "zeros_like", "ones_like",
        "empty_like", "full_like", "stack", "concatenate", "vstack", "hstack", "dstack", "load", "fromfile",
        "frombuffer", "arange", "linspace", "pad", "transpose", "expand_dims", "squeeze", "clip", "flip",
    )
) | {"cv2.imread", "cv2.resize", "cv2.cvtColor", "imageio.imread", "imageio.v3.imread"}  # fmt: skip
#: NumPy scalar types: `np.int64(label)` is not a tensor either.
NUMPY_SCALARS = frozenset(
    {"int8", "int16", "int32", "int64", "uint8", "float16", "float32", "float64", "bool_", "longlong"}
)
#: Array methods that return arrays.
ARRAY_METHODS = frozenset({"astype", "transpose", "reshape", "copy", "squeeze", "flatten", "ravel", "clip", "swapaxes"})
TORCH_PREFIXES = ("torch.", "torchvision.transforms.functional.to_tensor", "torchvision.io.")
NUMBERS = frozenset({"builtins.int", "builtins.float", "builtins.bool", "builtins.len", "builtins.round"})
STRINGS = frozenset({"builtins.str", "builtins.bytes", "builtins.repr"})
STRING_METHODS = frozenset({"decode", "read", "read_text", "read_bytes", "strip", "format", "encode", "lower", "upper"})


class Kind(enum.Enum):
    """What a returned value plainly is."""

    TENSOR = "tensor"
    NUMPY = "numpy"
    STRING = "string"
    NUMBER = "number"
    UNKNOWN = "unknown"


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
    severity = Severity.WARNING
    summary = "Dataset __getitem__ returns NumPy arrays or Python payloads instead of tensors."
    tokens = ("__getitem__",)
    requires = frozenset({"data"})
    preview = True
    tags = ("performance", "data-loading")

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.found: list[tuple[cst.ClassDef, cst.Return, str]] = []

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        if node.name.value != "__getitem__":
            return
        classdef = enclosing_class(self.ctx)
        if classdef is None:
            return
        for statement in descendants(node.body, into_functions=False):
            if isinstance(statement, cst.Return) and statement.value is not None:
                returned = self._returned(statement.value)
                if returned is not None:
                    self.found.append((classdef, statement, returned))

    def finish(self) -> None:
        for classdef, statement, returned in self.found:
            if self.ctx.data.kind(classdef) == "map":
                self._report(classdef, statement, returned)

    def _report(self, classdef: cst.ClassDef, statement: cst.Return, returned: str) -> None:
        self.report(
            statement,
            f"`{classdef.name.value}.__getitem__` returns {returned} instead of tensors: whatever the "
            "collate function leaves as Python objects (all of it with a custom `collate_fn` or "
            "`batch_size=None`, strings always) is pickled through the worker result queues instead of "
            "moving as shared-memory tensors; return `torch.from_numpy(...)`/`torch.as_tensor(...)` values",
            statement=statement,
        )

    def _returned(self, value: cst.BaseExpression) -> str | None:
        """A description of a plainly non-tensor return value, else None."""
        leaves = self._leaves(value, 0)
        kinds = set(leaves)
        if Kind.TENSOR in kinds:
            return None
        if Kind.NUMPY in kinds:
            return "a NumPy array" if leaves.count(Kind.NUMPY) == 1 else "NumPy arrays"
        if Kind.UNKNOWN in kinds:
            return None
        if Kind.STRING in kinds:
            return "a str/bytes payload" if len(leaves) == 1 else "str/bytes payloads"
        return None

    def _leaves(self, value: cst.BaseExpression, depth: int) -> list[Kind]:
        if isinstance(value, (cst.Tuple, cst.List)):
            return [k for e in value.elements for k in self._leaves(e.value, depth)]
        if isinstance(value, cst.Dict):
            return [
                k for e in value.elements
                for k in (self._leaves(e.value, depth) if isinstance(e, cst.DictElement) else [Kind.UNKNOWN])
            ]  # fmt: skip
        return [self._kind(value, depth)]

    def _kind(self, value: cst.BaseExpression, depth: int) -> Kind:
        if depth > 6:
            return Kind.UNKNOWN
        if isinstance(value, (cst.Integer, cst.Float)):
            return Kind.NUMBER
        if isinstance(value, cst.Name) and value.value in ("True", "False", "None"):
            return Kind.NUMBER
        if isinstance(value, (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString)):
            return Kind.STRING
        if isinstance(value, cst.Name):
            kinds = {self._kind(v, depth + 1) if isinstance(v, cst.BaseExpression) else Kind.UNKNOWN
                     for v in self.ctx.values_of(value)}  # fmt: skip
            return kinds.pop() if len(kinds) == 1 else Kind.UNKNOWN
        if isinstance(value, cst.Call):
            return self._call_kind(value, depth)
        if isinstance(value, cst.BinaryOperation):
            sides = {self._kind(value.left, depth + 1), self._kind(value.right, depth + 1)}
            return Kind.NUMPY if Kind.NUMPY in sides and Kind.TENSOR not in sides else Kind.UNKNOWN
        if isinstance(value, cst.Subscript):
            return Kind.NUMPY if self._kind(value.value, depth + 1) is Kind.NUMPY else Kind.UNKNOWN
        return Kind.UNKNOWN

    def _call_kind(self, call: cst.Call, depth: int) -> Kind:
        names = self.ctx.qualified_names(call.func)
        if names & NUMPY_CONSTRUCTORS:
            return Kind.NUMPY
        if any(n and n.startswith(TORCH_PREFIXES) for n in names):
            return Kind.TENSOR
        if names & NUMBERS:
            return Kind.NUMBER
        if names & STRINGS:
            return Kind.STRING
        if any(n and n.startswith("numpy.") and n[6:] in NUMPY_SCALARS for n in names):
            return Kind.NUMPY
        method = last_name(call.func) if isinstance(call.func, cst.Attribute) else None
        if method == "numpy":
            return Kind.NUMPY
        if method in ARRAY_METHODS and self._kind(call.func.value, depth + 1) is Kind.NUMPY:  # type: ignore[union-attr]
            return Kind.NUMPY
        if method in STRING_METHODS:
            receiver = self._kind(call.func.value, depth + 1)
            if method in ("decode", "read", "read_text", "read_bytes") or receiver is Kind.STRING:
                return Kind.STRING
        return Kind.UNKNOWN
