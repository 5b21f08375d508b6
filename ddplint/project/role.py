"""What the whole-project analysis asks of one file's lint."""

from __future__ import annotations

from dataclasses import dataclass

from ddplint.project.facts import NO_FACTS, FileFacts
from ddplint.project.summary import ModuleSummary


@dataclass(frozen=True)
class ProjectRole:
    """What the whole-project analysis asks of one file's lint: the facts of
    its imports, whether to return its `ModuleSummary` (`summarize`), whether
    another linted file imports it (then the summary holds the facts of its
    own functions and classes), and whether it imports another linted file
    (else no facts can reach it)."""

    facts: FileFacts = NO_FACTS
    summarize: bool = False
    imported: bool = True
    importer: bool = True
    #: What the file's first lint read of its imports and definitions
    #: (`ModuleSummary.layout`), for a re-lint of the same bytes: it reads no
    #: CPython tree again (the bytes compiled then).
    layout: ModuleSummary | None = None
    #: Only its layout is wanted now (`FileResult.summary`, nothing linted): a
    #: module no other imports is linted once the facts of its imports are known.
    layout_only: bool = False


#: A file linted on its own.
ALONE = ProjectRole()
