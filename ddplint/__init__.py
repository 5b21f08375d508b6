"""ddplint: find the bugs that hang, leak or silently mis-train PyTorch
distributed jobs, before the job is submitted.

The public Python API is `lint_source` (one file's text to findings) and
`lint_paths` (files and directories to a report); everything else is the
command line's.
"""

from __future__ import annotations

from ddplint.version import __version__

__all__ = ["__version__", "lint_source", "lint_paths"]


def __getattr__(name: str):  # PEP 562: keep `import ddplint` free of libcst
    if name == "lint_source":
        from ddplint.engine import lint_source

        return lint_source
    if name == "lint_paths":
        from ddplint.runner import lint_paths

        return lint_paths
    raise AttributeError(f"module 'ddplint' has no attribute {name!r}")
