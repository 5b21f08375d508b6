"""The catalogue of calls that write or read a path, for the rank-zero write
races (DDP021) and the whole-project facts that decide them.

Each entry maps a call to the argument holding the path: a position, `-1`
the object read (`json.load(open(p))`), `-2` the receiver
(`Path(p).write_text(...)`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ddplint.analysis.names import last_name
from ddplint.lazy import cst

if TYPE_CHECKING:
    from ddplint.analysis.view import ModelView

#: Writes by call -> index of the path argument.
WRITES = {
    "torch.save": 1, "numpy.save": 0, "numpy.savez": 0, "os.makedirs": 0, "os.mkdir": 0,
    "shutil.copy": 1, "shutil.copyfile": 1, "shutil.copytree": 1, "shutil.move": 1,
    "urllib.request.urlretrieve": 1,
}  # fmt: skip
WRITE_METHODS = {"save_pretrained": 0, "save_to_disk": 0, "to_csv": 0, "to_json": 0, "to_parquet": 0,
                 "extractall": 0, "write_text": -2, "write_bytes": -2}  # fmt: skip
READS = {"torch.load": 0, "numpy.load": 0, "os.listdir": 0, "glob.glob": 0, "datasets.load_from_disk": 0,
         "datasets.load_dataset": 0, "pandas.read_csv": 0, "json.load": -1}  # fmt: skip
READ_METHODS = {"from_pretrained": 0, "load_from_disk": 0, "read_text": -2, "read_bytes": -2}


def opens(node: cst.Call, names: frozenset, writing: bool) -> bool:
    """Whether `node` is the builtin `open` for writing (or, `writing` False, for reading)."""
    if "builtins.open" not in names or not node.args:
        return False
    mode = next((a.value for a in node.args if a.keyword is not None and a.keyword.value == "mode"), None)
    positional = [a.value for a in node.args if a.keyword is None]
    if mode is None and len(positional) > 1:
        mode = positional[1]
    text = mode.evaluated_value if isinstance(mode, cst.SimpleString) else ("r" if mode is None else None)
    if text is None:
        return False
    writes = any(c in text for c in "wax")
    return writes if writing else not writes


def writes_a_path(node: cst.Call, ctx: ModelView) -> bool:
    """Whether the call writes or prepares a path (any entry of the catalogue)."""
    names = ctx.qualified_names(node.func)
    if names & set(WRITES) or opens(node, names, writing=True):
        return True
    return isinstance(node.func, cst.Attribute) and last_name(node.func) in WRITE_METHODS
