"""The runtime preflight, `ddplint doctor`: checks of the real machine and of
the job's process group, run on every rank (SPEC §3).

Mirrors the static half: one module per check under `checks/`, each
registered by its definition and documented in its docstring, each returning
the same `Finding` model, so every reporter works for both halves. Needs
torch (``pip install 'ddplint[runtime]'``); nothing here is imported by
`ddplint check`.
"""

from __future__ import annotations

import importlib

#: The packages the doctor imports that `ddplint check` does not need.
RUNTIME_MODULES = ("torch", "psutil")


class RuntimeUnavailable(Exception):
    """torch or psutil cannot be imported; the message says which and why.

    The original exception is the ``__cause__`` (its traceback is what
    ``--debug`` shows).
    """


def import_torch() -> object:
    """Import torch without its warning about a missing NumPy (not ours to print)."""
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
        import torch
    return torch


def import_runtime() -> None:
    """Import torch and psutil, or raise `RuntimeUnavailable` saying what failed.

    Only a package that is not installed at all gets the install hint: a
    torch that is installed but cannot load (a missing ``libcudnn.so.9``, a
    CUDA library of the wrong version, a dependency of its own missing) is
    exactly what a preflight is run to find, so its own message is shown.
    """
    for name in RUNTIME_MODULES:
        try:
            import_torch() if name == "torch" else importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:
                raise RuntimeUnavailable(f"ddplint doctor needs {name}: pip install 'ddplint[runtime]'") from exc
            raise RuntimeUnavailable(_cannot_import(name, exc)) from exc
        except Exception as exc:  # noqa: BLE001 - whatever a broken install raises, say it
            raise RuntimeUnavailable(_cannot_import(name, exc)) from exc


def _cannot_import(name: str, exc: BaseException) -> str:
    first = next((line.strip() for line in str(exc).splitlines() if line.strip()), "")
    return f"ddplint doctor cannot import {name}: {type(exc).__name__}: {first}".rstrip(": ")
