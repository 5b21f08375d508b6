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

from collections import defaultdict
from typing import TYPE_CHECKING, Optional

from ddplint import knowledge
from ddplint.analysis.names import dotted_name, last_name
from ddplint.analysis.tree import descendants
from ddplint.lazy import cst

if TYPE_CHECKING:
    from ddplint.analysis.view import ModelView

GLOBAL, LOCAL = "global", "local"

GLOBAL_ENV = knowledge.texts(knowledge.ENV, knowledge.GLOBAL)
LOCAL_ENV = knowledge.texts(knowledge.ENV, knowledge.LOCAL)
GLOBAL_CALLS = knowledge.texts(knowledge.FUNCTION, knowledge.GLOBAL)
LOCAL_CALLS = knowledge.texts(knowledge.FUNCTION, knowledge.LOCAL)
GLOBAL_ATTRIBUTES = knowledge.texts(knowledge.NAME, knowledge.GLOBAL)
LOCAL_ATTRIBUTES = knowledge.texts(knowledge.NAME, knowledge.LOCAL)
_ENV_GETTERS = frozenset({"os.environ.get", "os.getenv"})
_TRANSPARENT = frozenset({"builtins.int", "builtins.str"})
_MAX_DEPTH = 6


#: Attribute name -> the kinds of the values assigned to it, in walk order.
AttributeKinds = dict[str, list[Optional[str]]]


def rank_kind(
    node: cst.BaseExpression, ctx: ModelView, depth: int = 0, consulted: set[str] | None = None
) -> str | None:
    """`GLOBAL`, `LOCAL`, or None (not a rank, or not known which).

    What a name or attribute visibly holds wins over what it is called
    (`local_rank = dist.get_rank()` is the global rank); the name decides
    only when the value is unknown (a parameter). Attributes are followed
    through their assignments in the module when the `RankKinds` analysis
    runs; `consulted` collects the attribute names the answer relied on.
    """
    attributes = ctx.rank_kinds.attributes if ctx.runs("rank_kinds") else None
    return _kind(node, ctx, depth, attributes, consulted)


def _kind(
    node: cst.BaseExpression, ctx: ModelView, depth: int, attributes: AttributeKinds | None, consulted: set[str] | None
) -> str | None:
    if depth > _MAX_DEPTH:
        return None
    depth += 1

    def kind(child: cst.BaseExpression) -> str | None:
        return _kind(child, ctx, depth, attributes, consulted)

    if isinstance(node, cst.BinaryOperation):
        if isinstance(node.operator, cst.Modulo) and kind(node.left) is not None:
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
            return kind(node.args[0].value)
        return None
    if isinstance(node, cst.Attribute):
        name = node.attr.value
        if attributes is not None and name in attributes:
            if consulted is not None:
                consulted.add(name)
            assigned = set(attributes[name])
            if assigned != {None}:  # `args.gpu = args.rank`, `args.local_rank = int(os.environ["RANK"])`
                return assigned.pop() if len(assigned) == 1 else None
        return GLOBAL if name in GLOBAL_ATTRIBUTES else LOCAL if name in LOCAL_ATTRIBUTES else None
    if isinstance(node, cst.Name):
        values = [v for v in ctx.values_of(node) if isinstance(v, cst.BaseExpression)]
        if values:  # what it holds, whatever it is called (`local_rank = dist.get_rank()`)
            kinds = {kind(v) for v in values}
            return kinds.pop() if len(kinds) == 1 else None
        if node.value in ("global_rank", "world_rank"):
            return GLOBAL
        return LOCAL if node.value == "local_rank" else None
    return None


class RankKinds:
    """Walker analysis: which rank each attribute is assigned, by attribute
    name (`args.rank = int(os.environ["RANK"])`, `args.gpu = args.rank`).

    The kind is read where the assignment is, since names resolve there. A
    constant (`args.gpu = 0`, `args.local_rank = -1`: the one-process
    fallback) is no rank and is left out. Kinds are final after the walk; a
    use answered earlier can be checked against them with `changed`.
    """

    def __init__(self, ctx: ModelView) -> None:
        self.ctx = ctx
        self.attributes: AttributeKinds = defaultdict(list)

    def leave_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._record(target.target, node.value)

    def leave_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._record(node.target, node.value)

    def _record(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        if not isinstance(target, cst.Attribute) or _constant(value):
            return
        self.attributes[target.attr.value].append(_kind(value, self.ctx, 0, self.attributes, None))

    def snapshot(self, names: set[str]) -> dict[str, frozenset]:
        """The kinds assigned so far to each of `names`."""
        return {name: frozenset(self.attributes.get(name, ())) for name in names}

    def changed(self, snapshot: dict[str, frozenset]) -> bool:
        """Whether a later assignment changed what those attributes may hold."""
        return any(frozenset(self.attributes.get(name, ())) != kinds for name, kinds in snapshot.items())


def _constant(value: cst.BaseExpression) -> bool:
    if isinstance(value, cst.UnaryOperation):
        value = value.expression
    return isinstance(value, (cst.Integer, cst.SimpleString)) or (isinstance(value, cst.Name) and value.value == "None")


def _env_key(node: cst.Subscript, ctx: ModelView) -> str | None:
    if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
        return None
    if "os.environ" not in ctx.qualified_names(node.value):
        return None
    return _string(node.slice[0].slice.value)


def _env_kind(key: str | None) -> str | None:
    return GLOBAL if key in GLOBAL_ENV else LOCAL if key in LOCAL_ENV else None


def _string(node: cst.CSTNode) -> str | None:
    return node.evaluated_value if isinstance(node, cst.SimpleString) else None


def device_index_arguments(call: cst.Call, ctx: ModelView) -> list[cst.BaseExpression]:
    """The expressions that pick a GPU in a call: `set_device(i)` (`set_device_index(i)`),
    `x.to(i)`/`x.cuda(i)`, `torch.device("cuda", i)`, `device_ids=[i]`,
    `device_id=i`, and the `{i}` of `f"cuda:{i}"`."""
    found: list[cst.BaseExpression] = []
    func = call.func
    method = last_name(func)
    names = ctx.qualified_names(func)
    positional = [a.value for a in call.args if a.keyword is None]
    if method in knowledge.DEVICE_SETTERS and positional:
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
        elif arg.keyword.value == "device_map":
            mapping = _dict_value(arg.value, ctx)  # `device_map={"": state.process_index}`, or a name bound to it
            if mapping is not None:
                found += [e.value for e in mapping.elements if isinstance(e, cst.DictElement)]
    return [_device_index(e, ctx) for e in found]


def _dict_value(node: cst.BaseExpression, ctx: ModelView) -> cst.Dict | None:
    if isinstance(node, cst.Name):
        values = ctx.values_of(node)
        node = values[0] if len(values) == 1 else node
    return node if isinstance(node, cst.Dict) else None


def _device_index(node: cst.BaseExpression, ctx: ModelView) -> cst.BaseExpression:
    """The GPU index a device expression holds: `i` of `f"cuda:{i}"` or
    `torch.device("cuda", i)`, also through a name bound to one."""
    if isinstance(node, cst.Name):
        values = [v for v in ctx.values_of(node) if isinstance(v, cst.BaseExpression)]
        if len(values) == 1 and isinstance(values[0], (cst.FormattedString, cst.Call)):
            inner = _literal_index(values[0], ctx)
            if inner is not None:
                return inner
    return _literal_index(node, ctx) or node


def _literal_index(node: cst.BaseExpression, ctx: ModelView) -> cst.BaseExpression | None:
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


_ENV_READERS = frozenset({"os.environ.get", "environ.get", "os.getenv", "getenv", "os.environ.setdefault", "environ.setdefault"})


def environment_reads(module: cst.CSTNode) -> frozenset[str]:
    """The environment variables `module` (or any subtree) reads, by their literal
    names: ``os.environ["LOCAL_RANK"]``, ``os.environ.get(...)``,
    ``os.getenv(...)``, ``"LOCAL_RANK" in os.environ``. Assignments
    (``os.environ["LOCAL_RANK"] = str(args.local_rank)``) are writes, not reads.
    Read by text (``environ``, ``getenv``), so imports inside functions count."""
    written: set[int] = set()
    found: set[str] = set()
    for node in descendants(module):
        if isinstance(node, cst.Assign):
            written.update(id(t.target) for t in node.targets)
        elif isinstance(node, (cst.AugAssign, cst.AnnAssign, cst.Del)):
            written.add(id(node.target))
        elif isinstance(node, cst.Subscript) and id(node) not in written and _is_environ(node.value):
            key = node.slice[0].slice if len(node.slice) == 1 else None
            if isinstance(key, cst.Index) and _string(key.value) is not None:
                found.add(_string(key.value))  # type: ignore[arg-type]
        elif isinstance(node, cst.Call) and node.args and dotted_name(node.func) in _ENV_READERS:
            key = _string(node.args[0].value)
            if key is not None:
                found.add(key)
        elif isinstance(node, cst.Comparison) and _string(node.left) is not None:
            if any(isinstance(c.operator, cst.In) and _is_environ(c.comparator) for c in node.comparisons):
                found.add(_string(node.left))  # type: ignore[arg-type]
    return frozenset(found)


def _is_environ(node: cst.BaseExpression) -> bool:
    return dotted_name(node) in ("os.environ", "environ")
