"""Which linted modules other linted modules import, from their text alone.

Run before any file is parsed, so that only imported modules are walked for
their summaries: a module nobody imports (a training script, a test, a
model file loaded by name) cannot lend facts to another one. A regular
expression over the import statements is enough; an import it misses (one
built with ``importlib``) only costs the facts of that module.
"""

from __future__ import annotations

import re
from typing import Iterable

_IMPORT = re.compile(
    rb"^[ \t]*(?:from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#;]*)|import[ \t]+([^\n#;]+))",
    re.MULTILINE,
)


def imported_names(data: bytes) -> Iterable[str]:
    """Dotted names a module's import statements may load (relative ones keep
    their dots): ``from a import b`` gives ``a`` and ``a.b`` (``b`` may be a
    submodule), ``import a.b`` gives ``a`` and ``a.b``."""
    for match in _IMPORT.finditer(data):
        module, names, plain = match.groups()
        if plain is not None:
            for alias in plain.decode("utf-8", "replace").split(","):
                dotted = alias.split(" as ")[0].strip()
                parts = dotted.split(".")
                yield from (".".join(parts[: i + 1]) for i in range(len(parts)) if parts[i].isidentifier())
            continue
        base = module.decode("utf-8", "replace")
        yield base
        prefix = base if base.endswith(".") else base + "."
        for alias in names.decode("utf-8", "replace").strip("()").split(","):
            name = alias.split(" as ")[0].strip()
            if name.isidentifier():
                yield prefix + name
