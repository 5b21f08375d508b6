"""Which linted modules other linted modules import, from their text alone.

Run before any file is parsed, so that only imported modules are walked for
their summaries: a module nobody imports (a training script, a test, a
model file loaded by name) cannot lend facts to another one. A regular
expression over the import statements is enough; an import it misses (one
built with ``importlib``) only costs the facts of that module.
"""

from __future__ import annotations

import re
from typing import Iterable, Iterator

#: One import statement, matched at the start of its line.
_IMPORT = re.compile(
    rb"[ \t]*(?:from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#;]*)|import[ \t]+([^\n#;]+))"
)


def import_statements(data: bytes) -> Iterator[re.Match[bytes]]:
    """The import statements that start a line, in order. Each contains
    ``import`` on its first line, so only the lines where `bytes.find` sees
    that word are tried (a multi-line pattern tried at every position of
    90 MB of source took a second)."""
    done = 0  # the end of the last statement: a line inside it starts none
    start = data.find(b"import")
    while start != -1:
        line = data.rfind(b"\n", 0, start) + 1
        match = _IMPORT.match(data, line) if line >= done else None
        if match is not None:
            yield match
            done = match.end()
        start = data.find(b"import", max(start + 6, done))


def imported_names(data: bytes) -> Iterable[str]:
    """Dotted names a module's import statements may load (relative ones keep
    their dots): ``from a import b`` gives ``a`` and ``a.b`` (``b`` may be a
    submodule), ``import a.b`` gives ``a`` and ``a.b``."""
    for match in import_statements(data):
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
