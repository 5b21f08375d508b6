"""The ddplint steps of the composite Action (action.yml at the repository root).

The Action's inputs arrive as environment variables and never reach a shell:
``path`` and ``args`` are split into words as a POSIX shell would split them
(quotes group words; nothing is expanded, substituted or executed), and
ddplint is started with an argument vector::

    python run.py sarif   # SARIF for code scanning: never fails on findings (--exit-zero)
    python run.py gate    # the user's args as given: fails the job as their --fail-on says

Environment: ``DDPLINT_PATH``, ``DDPLINT_ARGS``, ``DDPLINT_CATEGORY``,
``DDPLINT_UPLOAD`` ("true": the gate prints text, since the findings are
already in code scanning; otherwise GitHub annotations) and
``DDPLINT_SARIF`` (the SARIF file, default ``ddplint.sarif``).

The sarif step writes the Action's outputs to ``$GITHUB_OUTPUT``: the SARIF
file (``sarif-file``) and the counts of its unsuppressed results
(``findings``, ``errors``, ``warnings``, ``notes``).
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys


def words(variable: str) -> list[str]:
    """The words of an input, split like a shell's words but never expanded."""
    try:
        return shlex.split(os.environ.get(variable, ""))
    except ValueError as exc:  # an unbalanced quote
        raise SystemExit(f"ddplint action: {variable}: {exc}") from None


def command(step: str) -> list[str]:
    """The ddplint command line of `step` ("sarif" or "gate")."""
    paths, args = words("DDPLINT_PATH"), words("DDPLINT_ARGS")
    if step == "sarif":
        # The user's args first, ours last so that they win: the upload must
        # happen whatever --fail-on says; the gate step fails the job after it.
        category = os.environ.get("DDPLINT_CATEGORY", "")
        sarif = sarif_file()
        extra = ["--sarif-category", category] if category else []
        return ["ddplint", "check", *paths, *args, "--format", "sarif", *extra, "--output", sarif, "--exit-zero"]
    if step == "gate":
        shown = "text" if os.environ.get("DDPLINT_UPLOAD") == "true" else "github"
        return ["ddplint", "check", "--format", shown, *paths, *args]  # a --format in args still wins
    raise SystemExit(f"ddplint action: unknown step {step!r} (sarif or gate)")


def sarif_file() -> str:
    return os.environ.get("DDPLINT_SARIF") or "ddplint.sarif"


def counts(log: dict) -> dict[str, int]:
    """The unsuppressed results of a SARIF log, in all and by level."""
    levels = [r.get("level", "warning") for run in log.get("runs", []) for r in run.get("results", [])
              if not r.get("suppressions")]  # fmt: skip
    return {"findings": len(levels), "errors": levels.count("error"),
            "warnings": levels.count("warning"), "notes": levels.count("note")}  # fmt: skip


def write_outputs(path: str) -> None:
    """The Action's outputs (``name=value`` lines appended to $GITHUB_OUTPUT)."""
    target = os.environ.get("GITHUB_OUTPUT")
    if not target:
        return
    with open(path, encoding="utf-8") as f:
        found = counts(json.load(f))
    with open(target, "a", encoding="utf-8") as out:
        out.write(f"sarif-file={path}\n")
        out.writelines(f"{name}={value}\n" for name, value in found.items())


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        raise SystemExit("usage: run.py sarif|gate")
    status = subprocess.run(command(argv[1])).returncode
    if argv[1] == "sarif" and status == 0:
        write_outputs(sarif_file())
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv))
