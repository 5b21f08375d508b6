"""Unit tests of the shared name-resolution analysis (independent of rules).

Each snippet marks expressions with `probe(expr)`; the test walks the module
with the engine's analyses and records what `expr` resolves to at that point.
"""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from ddplint.engine.context import FileContext
from ddplint.testing import walk_snippet


class _Probe:
    def __init__(self, ctx: FileContext, seen: list) -> None:
        self.ctx, self.seen = ctx, seen

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value == "probe":
            self.seen.append(self.ctx.qualified_names(node.args[0].value))


def resolve(source: str) -> list[set]:
    seen: list = []
    walk_snippet(textwrap.dedent(source), lambda ctx: _Probe(ctx, seen))
    return [set(s) for s in seen]


CASES = {
    "import_as": ("import torch.distributed as dist\nprobe(dist.barrier)", {"torch.distributed.barrier"}),
    "import_dotted": ("import torch.distributed\nprobe(torch.distributed.all_reduce)", {"torch.distributed.all_reduce"}),
    "from_import_as": ("from torch.distributed import barrier as b\nprobe(b)", {"torch.distributed.barrier"}),
    "from_module_import": ("from torch import distributed as dist\nprobe(dist.gather)", {"torch.distributed.gather"}),
    "alias_assignment": ("import torch\namp = torch.cuda.amp\nprobe(amp.autocast)", {"torch.cuda.amp.autocast"}),
    "builtin": ("probe(print)", {"builtins.print"}),
    "unbound": ("probe(undefined_name.attr)", set()),
    "relative": ("from .utils import barrier\nprobe(barrier)", {".utils.barrier"}),
    "star_import": ("from torch.distributed import *\nprobe(barrier)", {"torch.distributed.barrier"}),
    "star_import_builtin": ("from torch import *\nprobe(max)", {"torch.max", "builtins.max"}),
    "shadow_by_assignment": ("import torch.distributed as dist\ndist = object()\nprobe(dist.barrier)", {None}),
    "shadow_by_def": ("from torch.cuda.amp import autocast\ndef autocast(): pass\nprobe(autocast)", {None}),
    "try_except_union": (
        "try:\n    import torch.distributed as dist\nexcept ImportError:\n    dist = None\nprobe(dist.barrier)",
        {"torch.distributed.barrier", None},
    ),
    "if_else_union": (
        "if new:\n    from torch.amp import autocast\nelse:\n    from torch.cuda.amp import autocast\nprobe(autocast)",
        {"torch.amp.autocast", "torch.cuda.amp.autocast"},
    ),
    "sequential_rebinding_replaces": (
        "from torch.cuda.amp import autocast\nfrom torch.amp import autocast\nprobe(autocast)",
        {"torch.amp.autocast"},
    ),
    "parameter_shadows": ("import torch\ndef f(torch):\n    probe(torch.cuda)", {None}),
    "local_import_in_function": (
        "def f():\n    import torch.distributed as dist\n    probe(dist.barrier)",
        {"torch.distributed.barrier"},
    ),
    "function_sees_final_module_binding": (
        "def f():\n    probe(dist.barrier)\nimport torch.distributed as dist",
        {"torch.distributed.barrier"},
    ),
    "module_code_sees_source_order": ("probe(dist)\nimport torch.distributed as dist", set()),
    "class_body_not_visible_in_method": (
        "import torch.distributed as dist\nclass A:\n    dist = None\n    def m(self):\n        probe(dist.barrier)",
        {"torch.distributed.barrier"},
    ),
    "class_body_sees_itself": ("class A:\n    import torch.distributed as dist\n    probe(dist)", {"torch.distributed"}),
    "comprehension_target_shadows": (
        "import torch.distributed as dist\nxs = [probe(dist) for dist in range(3)]",
        {None},
    ),
    "nested_function_sees_enclosing": (
        "def outer():\n    import torch.distributed as d\n    def inner():\n        probe(d.barrier)",
        {"torch.distributed.barrier"},
    ),
    "global_declaration": (
        "import torch.distributed as dist\ndef f():\n    global dist\n    probe(dist.barrier)",
        {"torch.distributed.barrier"},
    ),
    "with_as_is_unknown": ("import torch\nwith open('f') as torch:\n    probe(torch.save)", {None}),
    "for_target_is_unknown": ("import torch\nfor torch in range(3):\n    probe(torch)", {"torch", None}),
    "tuple_unpacking_alias": (
        "import torch\na, b = torch.cuda.amp, torch.amp\nprobe(a.autocast)\nprobe(b.autocast)",
        {"torch.cuda.amp.autocast"},
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_qualified_names(name: str) -> None:
    source, expected = CASES[name]
    assert resolve(source)[0] == expected


def test_tuple_unpacking_second_element() -> None:
    assert resolve(CASES["tuple_unpacking_alias"][0])[1] == {"torch.amp.autocast"}
