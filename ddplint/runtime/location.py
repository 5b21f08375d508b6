"""Where `ddplint doctor`'s SARIF results are shown.

The doctor's results are about the machine and the job, not about a line of
code, but GitHub code scanning rejects a whole upload if one result has no
location. Each result is therefore shown at the first line of one file, the
first of these that applies:

1. ``--sarif-location FILE``;
2. under GitHub Actions, the workflow file that ran the doctor
   (``GITHUB_WORKFLOW_REF``), when it is in the checkout;
3. the module of ``--step``, else of ``--dataset`` (the code the probes ran);
4. the project's configuration: ``pyproject.toml``, ``ddplint.toml``,
   ``setup.py`` or ``setup.cfg``, the first that exists in the working
   directory, else at the repository root.

When none of these exists, the results have no location (never a file that
is not there: code scanning would show an alert at a path that does not
exist) and `ddplint doctor` says on stderr that code scanning will reject
the upload unless ``--sarif-location`` names a file.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from ddplint.paths import project_root
from ddplint.runtime.context import DoctorRequest

#: Project files tried last, at the repository root.
PROJECT_FILES = ("pyproject.toml", "ddplint.toml", "setup.py", "setup.cfg")


def results_location(request: DoctorRequest, environ: Mapping[str, str] | None = None) -> str | None:
    """The file (an absolute path) at which the doctor's SARIF results are
    shown; None when no file applies."""
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
    places = dict.fromkeys((cwd, root))  # the working directory first, once
    found = next((d / name for d in places for name in PROJECT_FILES if (d / name).is_file()), None)
    return str(found) if found is not None else None


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
