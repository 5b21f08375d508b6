"""Which GPUs a process sees: `CUDA_VISIBLE_DEVICES` written by the module.

A process launched with `CUDA_VISIBLE_DEVICES=<its local rank>` sees one GPU,
which is `cuda:0` to it: `torch.cuda.set_device(0)` and `"cuda:0"` are then
right on every rank, and `set_device(local_rank)` would ask rank 1 for a
device it does not see. The variable is set in the process itself before
CUDA starts (`os.environ["CUDA_VISIBLE_DEVICES"] = str(local_rank)`,
`os.environ.setdefault(...)`, `os.environ.update({...})`, `os.putenv(...)`)
or by a launcher in the module for the processes it starts
(`subprocess.Popen(cmd, env=dict(os.environ, CUDA_VISIBLE_DEVICES=str(i)))`,
`env["CUDA_VISIBLE_DEVICES"] = str(i)`).
"""

from __future__ import annotations

from ddplint.analysis.catalogue import ENV_SETTERS, VISIBLE_DEVICES_VARIABLES
from ddplint.analysis.names import last_name
from ddplint.lazy import cst


def _names_variable(node: cst.CSTNode | None) -> bool:
    return isinstance(node, cst.SimpleString) and node.evaluated_value in VISIBLE_DEVICES_VARIABLES


def sets_visible_devices(node: cst.CSTNode) -> bool:
    """Whether `node` writes a visible-devices variable: an assignment target
    `<env>["CUDA_VISIBLE_DEVICES"]` (os.environ, or the environment of a child
    process), a call `setdefault`/`update`/`putenv` naming it, a keyword
    `CUDA_VISIBLE_DEVICES=` (`dict(os.environ, CUDA_VISIBLE_DEVICES=...)`), or a
    dict key (`env={"CUDA_VISIBLE_DEVICES": ...}`)."""
    if isinstance(node, cst.Subscript):
        if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
            return False
        return _names_variable(node.slice[0].slice.value)
    if isinstance(node, cst.Call):
        if any(a.keyword is not None and a.keyword.value in VISIBLE_DEVICES_VARIABLES for a in node.args):
            return True
        if last_name(node.func) in ENV_SETTERS and node.args:
            first = node.args[0].value
            return _names_variable(first) or (isinstance(first, cst.Dict) and sets_visible_devices(first))
        return False
    if isinstance(node, cst.Dict):
        return any(isinstance(e, cst.DictElement) and _names_variable(e.key) for e in node.elements)
    return False
