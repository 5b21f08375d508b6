"""Global rank or local rank: which one an expression holds.

The global rank (`RANK`, `dist.get_rank()`, `accelerator.process_index`,
`SLURM_PROCID`) numbers the processes of the whole job; the local rank
(`LOCAL_RANK`, `SLURM_LOCALID`, `accelerator.local_process_index`,
`rank % torch.cuda.device_count()`, the process index `mp.spawn` passes)
numbers those of one node, and is what picks a GPU. Read during the walk,
where names resolve; only certain answers are given, anything else is
`None`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ddplint.analysis import catalogue
from ddplint.analysis.names import last_name
from ddplint.lazy import cst

if TYPE_CHECKING:
    from ddplint.engine.context import FileContext

GLOBAL, LOCAL = "global", "local"

GLOBAL_ENV = catalogue.texts(catalogue.ENV, catalogue.GLOBAL)
LOCAL_ENV = catalogue.texts(catalogue.ENV, catalogue.LOCAL)
GLOBAL_CALLS = catalogue.texts(catalogue.FUNCTION, catalogue.GLOBAL)
LOCAL_CALLS = catalogue.texts(catalogue.FUNCTION, catalogue.LOCAL)
GLOBAL_ATTRIBUTES = catalogue.texts(catalogue.NAME, catalogue.GLOBAL)
LOCAL_ATTRIBUTES = catalogue.texts(catalogue.NAME, catalogue.LOCAL)
_ENV_GETTERS = frozenset({"os.environ.get", "os.getenv"})
_TRANSPARENT = frozenset({"builtins.int", "builtins.str"})
_MAX_DEPTH = 6


def rank_kind(node: cst.BaseExpression, ctx: FileContext, depth: int = 0) -> str | None:
    """`GLOBAL`, `LOCAL`, or None (not a rank, or not known which)."""
    if depth > _MAX_DEPTH:
        return None
    depth += 1
    if isinstance(node, cst.BinaryOperation):
        if isinstance(node.operator, cst.Modulo) and rank_kind(node.left, ctx, depth) is not None:
            return LOCAL  # `rank % torch.cuda.device_count()`: the GPU index on a uniform node
        if isinstance(node.operator, cst.Add) and isinstance(node.left, cst.BinaryOperation):
            if isinstance(node.left.operator, cst.Multiply) and _mentions_rank(node):
                return GLOBAL  # `node_rank * ngpus_per_node + gpu`
        return None
    if isinstance(node, cst.Subscript):
        return _env_kind(_env_key(node, ctx))
    if isinstance(node, cst.Call):
        names = ctx.qualified_names(node.func)
        if names & GLOBAL_CALLS:
            return None if node.args else GLOBAL  # `get_rank(group)`: the rank in that group
        if names & LOCAL_CALLS:
            return LOCAL
        if names & _ENV_GETTERS and node.args:
            return _env_kind(_string(node.args[0].value))
        if names & _TRANSPARENT and len(node.args) == 1:
            return rank_kind(node.args[0].value, ctx, depth)
        return None
    if isinstance(node, cst.Attribute):
        name = node.attr.value
        return GLOBAL if name in GLOBAL_ATTRIBUTES else LOCAL if name in LOCAL_ATTRIBUTES else None
    if isinstance(node, cst.Name):
        values = [v for v in ctx.values_of(node) if isinstance(v, cst.BaseExpression)]
        if values:  # what it holds, whatever it is called (`local_rank = dist.get_rank()`)
            kinds = {rank_kind(v, ctx, depth) for v in values}
            return kinds.pop() if len(kinds) == 1 else None
        if node.value in ("global_rank", "world_rank"):
            return GLOBAL
        return LOCAL if node.value == "local_rank" else None
    return None


def _env_key(node: cst.Subscript, ctx: FileContext) -> str | None:
    if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
        return None
    if "os.environ" not in ctx.qualified_names(node.value):
        return None
    return _string(node.slice[0].slice.value)


def _env_kind(key: str | None) -> str | None:
    return GLOBAL if key in GLOBAL_ENV else LOCAL if key in LOCAL_ENV else None


def _string(node: cst.CSTNode) -> str | None:
    return node.evaluated_value if isinstance(node, cst.SimpleString) else None


def device_index_arguments(call: cst.Call, ctx: FileContext) -> list[cst.BaseExpression]:
    """The expressions that pick a GPU in a call: `set_device(i)`,
    `x.to(i)`/`x.cuda(i)`, `torch.device("cuda", i)`, `device_ids=[i]`,
    `device_id=i`, and the `{i}` of `f"cuda:{i}"`."""
    found: list[cst.BaseExpression] = []
    func = call.func
    method = last_name(func)
    names = ctx.qualified_names(func)
    positional = [a.value for a in call.args if a.keyword is None]
    if method == "set_device" and positional:
        found.append(positional[0])
    elif method in ("to", "cuda") and isinstance(func, cst.Attribute) and positional:
        found.append(positional[0])
    elif names & {"torch.device"} and positional:
        found.append(call)
    elif names & {"torch.cuda.device"} and positional:
        found.append(positional[0])
    for arg in call.args:
        if arg.keyword is None:
            continue
        if arg.keyword.value == "device_ids" and isinstance(arg.value, (cst.List, cst.Tuple)):
            found += [e.value for e in arg.value.elements]
        elif arg.keyword.value in ("device_id", "device", "output_device"):
            found.append(arg.value)
        elif arg.keyword.value == "device_map" and isinstance(arg.value, cst.Dict):
            found += [e.value for e in arg.value.elements if isinstance(e, cst.DictElement)]
    return [_device_index(e, ctx) for e in found]


def _device_index(node: cst.BaseExpression, ctx: FileContext) -> cst.BaseExpression:
    """The GPU index a device expression holds: `i` of `f"cuda:{i}"` or
    `torch.device("cuda", i)`, also through a name bound to one."""
    if isinstance(node, cst.Name):
        values = [v for v in ctx.values_of(node) if isinstance(v, cst.BaseExpression)]
        if len(values) == 1 and isinstance(values[0], (cst.FormattedString, cst.Call)):
            inner = _literal_index(values[0], ctx)
            if inner is not None:
                return inner
    return _literal_index(node, ctx) or node


def _literal_index(node: cst.BaseExpression, ctx: FileContext) -> cst.BaseExpression | None:
    if isinstance(node, cst.Call) and ctx.qualified_names(node.func) & {"torch.device"}:
        positional = [a.value for a in node.args if a.keyword is None]
        if len(positional) == 2:
            return positional[1]
        if len(positional) == 1:
            return _cuda_index(positional[0])
        return None
    return _cuda_index(node)


def _cuda_index(node: cst.BaseExpression) -> cst.BaseExpression | None:
    """`{i}` of `f"cuda:{i}"` (and torchtitan's `f"{device_type}:{i}"`)."""
    if isinstance(node, cst.FormattedString):
        parts = list(node.parts)
        if len(parts) >= 2 and isinstance(parts[-1], cst.FormattedStringExpression):
            before = parts[-2]
            if isinstance(before, cst.FormattedStringText) and before.value.endswith(":"):
                text = "".join(p.value for p in parts if isinstance(p, cst.FormattedStringText))
                if text.startswith("cuda") or (text == ":" and len(parts) == 3):
                    return parts[-1].expression
    return None


def _mentions_rank(node: cst.CSTNode) -> bool:
    text = cst.Module([]).code_for_node(node).lower()
    return "rank" in text or "gpu" in text
