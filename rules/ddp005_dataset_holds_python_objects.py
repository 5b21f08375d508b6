"""DDP005 dataset-holds-python-objects."""

from __future__ import annotations

from ddplint.analysis.datasets import held_python_objects
from ddplint.analysis.guards import Site
from ddplint.lazy import cst
from ddplint.model import Severity
from ddplint.rule import Rule


class DatasetHoldsPythonObjects(Rule):
    """
    ## What it does

    Flags the `self.attr = ...` assignment in a Dataset's `__init__` that
    stores a Python list or dict of many objects — from `json.load`,
    `pickle.load`, `yaml.safe_load`, `f.readlines()`, `.read().splitlines()`,
    `list(open(...))`, `list(csv.reader(...))`, a comprehension, `.tolist()`,
    pandas' `.to_dict()`/`.to_list()`, or `glob.glob`/`os.listdir` (lists of
    paths) — when `__getitem__`, or a method it calls, indexes it
    (`self.attr[idx]`). Local variables assigned in `__init__` are followed.
    Each attribute is reported once, at its first such assignment (the
    other branches that fill it hold the same problem).

    Not flagged: NumPy arrays (`np.array(...)`, `np.load`, `np.memmap`),
    tensors, Hugging Face `datasets` objects, small literal tables,
    name-to-index maps (`{c: i for i, c in enumerate(classes)}`), and
    attributes that `__getitem__` never indexes (read only in `__len__`).

    ## Why is this bad?

    DataLoader workers are forked from the main process and share its
    memory copy-on-write. Every Python object carries a reference count, and
    merely reading `self.samples[idx]` in a worker writes that count, so the
    page holding the object is copied into the worker. Over an epoch each
    worker copies the whole list: resident memory grows by the dataset's
    size times `num_workers` (times the ranks on the node) until the host
    runs out of memory (pytorch/pytorch#13246). The objects themselves are
    not leaking; the pages are being copied.

    ## Example

    ```python
    class Captions(Dataset):
        def __init__(self, path):
            with open(path) as f:
                self.samples = json.load(f)  # a list of dicts

        def __getitem__(self, idx):
            return self.samples[idx]["caption"]
    ```

    ## Use instead

    ```python
    class Captions(Dataset):
        def __init__(self, path):
            with open(path) as f:
                samples = json.load(f)
            # Fixed-width NumPy arrays (or tensors, Arrow, a memory map):
            # one object, no per-item reference counts.
            self.captions = np.array([s["caption"] for s in samples], dtype=np.bytes_)

        def __getitem__(self, idx):
            return self.captions[idx].decode()
    ```

    ## Fix safety

    No automatic fix: the remedy (NumPy arrays, Arrow, memory-mapped files) is
    a change of data structure, not an edit of a line.

    ## References

    - [pytorch/pytorch#13246: DataLoader memory keeps growing with Python objects](https://github.com/pytorch/pytorch/issues/13246)
    - [torch.utils.data: multi-process data loading](https://pytorch.org/docs/stable/data.html#multi-process-data-loading)
    """

    code = "DDP005"
    name = "dataset-holds-python-objects"
    severity = Severity.WARNING
    summary = "A Dataset indexes a Python list/dict of objects: worker memory grows (copy-on-read)."
    tokens = ("__getitem__",)
    requires = frozenset({"data"})
    tags = ("memory", "data-loading")

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.reported: set[object] = set()  # a base class's `__init__` is its subclasses' too

    def check_ClassDef(self, node: cst.ClassDef, site: Site) -> None:
        if self.ctx.data.kind(node) != "map":
            return
        for attr, statement in held_python_objects(node, self.ctx):
            # one finding per attribute, at its first assignment to a container (then not again per line)
            if not {id(statement), (id(node), attr)} & self.reported:
                self.reported |= {id(statement), (id(node), attr)}
                self.report(
                    statement,
                    f"`self.{attr}` holds a Python container of objects that `__getitem__` indexes: each "
                    "forked DataLoader worker touches their reference counts and copies the pages, so "
                    "memory grows with num_workers × dataset size; store NumPy arrays of a fixed-width "
                    "dtype, tensors, or a memory-mapped/Arrow table instead",
                    statement=statement,
                )
