"""Where `ddplint doctor`'s SARIF results are shown.

The doctor's results are about the machine and the job, not about a line of
code, but GitHub code scanning rejects a whole upload if one result has no
location. Each result is therefore shown at the first line of one file, the
first of these that applies:

1. ``--sarif-location FILE``;
2. under GitHub Actions, the workflow file that ran the doctor
   (``GITHUB_WORKFLOW_REF``), when it is in the checkout;
3. the module of ``--step``, else of ``--dataset`` (the code the probes ran);
4. the project's ``pyproject.toml``, ``setup.py`` or ``setup.cfg`` (the first
   that exists at the repository root), else ``pyproject.toml``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from ddplint.paths import project_root
from ddplint.runtime.context import DoctorRequest

#: Project files tried last, at the repository root.
PROJECT_FILES = ("pyproject.toml", "setup.py", "setup.cfg")


def results_location(request: DoctorRequest, environ: Mapping[str, str] | None = None) -> str:
    """The file (an absolute path) at which the doctor's SARIF results are shown."""
    cwd = request.options.cwd
    if request.sarif_location:
        return str(cwd / request.sarif_location)
    root = project_root(cwd)
    workflow = workflow_file(root, os.environ if environ is None else environ)
    if workflow is not None:
        return str(workflow)
    for reference in (request.options.step, request.options.dataset):
        module = module_file(cwd, reference) if reference else None
        if module is not None:
            return str(module)
    found = next((root / name for name in PROJECT_FILES if (root / name).is_file()), None)
    return str(found or root / PROJECT_FILES[0])


def workflow_file(root: Path, environ: Mapping[str, str]) -> Path | None:
    """The running GitHub Actions workflow, from ``GITHUB_WORKFLOW_REF``
    (``owner/repo/.github/workflows/ci.yml@refs/heads/main``), if it is a
    file under `root`."""
    ref = environ.get("GITHUB_WORKFLOW_REF", "")
    path = ref.split("@", 1)[0].split("/", 2)[-1] if ref.count("/") >= 2 else ""
    candidate = root / path if path else None
    return candidate if candidate is not None and candidate.is_file() else None


def module_file(cwd: Path, reference: str) -> Path | None:
    """The file of `module` in a `module:factory` reference, looked up in
    `cwd` as the probes import it (never imported here)."""
    parts = reference.partition(":")[0].split(".")
    base = cwd.joinpath(*parts)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None
