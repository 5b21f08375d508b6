"""The runtime check contract and registry, the twin of `ddplint.rule`."""

from __future__ import annotations

import enum
import importlib
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from ddplint.model import Severity
from ddplint.rule import RuleDefinitionError, RuleDocs

if TYPE_CHECKING:
    from ddplint.runtime.context import RankContext

_CODE_RE = re.compile(r"^RT\d{3}$")
_CHECKS: dict[str, type[Check]] = {}


class Status(str, enum.Enum):
    """How a check came out on one rank."""

    PASS = "pass"
    FAIL = "fail"
    NOTE = "note"
    SKIP = "skip"
    #: The check itself could not run (the user's code raised): exit status 2.
    ERROR = "error"


@dataclass(frozen=True)
class CheckResult:
    """One check's outcome on one rank: the measured values and the verdict."""

    code: str
    status: Status
    summary: str
    measured: dict[str, Any] = field(default_factory=dict)
    severity: str | None = None  # for failures: error/warning/note

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "status": self.status.value, "summary": self.summary,
                "measured": self.measured, "severity": self.severity}  # fmt: skip

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CheckResult:
        return cls(data["code"], Status(data["status"]), data["summary"], data.get("measured", {}), data.get("severity"))


class Check:
    """Base class of runtime checks; subclasses register themselves.

    `run` returns the check's result on this rank. `per_rank` checks run on
    every rank; the others (the probes) only on rank 0.
    """

    code: ClassVar[str]
    name: ClassVar[str]
    severity: ClassVar[Severity]
    summary: ClassVar[str]
    #: One line: what to do when the check fails (printed under the failure).
    advice: ClassVar[str]
    tags: ClassVar[tuple[str, ...]] = ()
    distributed_only: ClassVar[bool] = False
    per_rank: ClassVar[bool] = True
    docs: ClassVar[RuleDocs]

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if "code" not in cls.__dict__:
            return
        if not _CODE_RE.match(cls.code):
            raise RuleDefinitionError(f"{cls.__qualname__}: code {cls.code!r} is not of the form RT000")
        advice = cls.__dict__.get("advice", "")
        if not advice.strip() or "\n" in advice:
            raise RuleDefinitionError(f"{cls.__qualname__}: advice must be one line saying what to do")
        cls.docs = RuleDocs.parse(cls.__doc__ or "", cls.__qualname__)
        if cls.code in _CHECKS and _CHECKS[cls.code] is not cls:
            raise RuleDefinitionError(f"{cls.__qualname__}: code {cls.code} already used")
        _CHECKS[cls.code] = cls

    def run(self, ctx: RankContext) -> CheckResult:  # pragma: no cover - abstract
        raise NotImplementedError

    def result(self, status: Status, summary: str, **measured: Any) -> CheckResult:
        """A result of this check; failures carry the check's severity."""
        severity = self.severity.value if status is Status.FAIL else None
        return CheckResult(self.code, status, summary, measured, severity)


def count(number: int, noun: str) -> str:
    """``1 worker``, ``8 workers``."""
    return f"{number} {noun}{'' if number == 1 else 's'}"


def all_checks() -> tuple[type[Check], ...]:
    """Every registered runtime check, ordered by code."""
    importlib.import_module("ddplint.runtime.checks")
    return tuple(_CHECKS[code] for code in sorted(_CHECKS))
