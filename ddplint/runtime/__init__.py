"""The runtime preflight, `ddplint doctor`: checks of the real machine and of
the job's process group, run on every rank (SPEC §3).

Mirrors the static half: one module per check under `checks/`, each
registered by its definition and documented in its docstring, each returning
the same `Finding` model, so every reporter works for both halves. Needs
torch (``pip install 'ddplint[runtime]'``); nothing here is imported by
`ddplint check`.
"""

TORCH_HINT = "ddplint doctor needs torch: pip install 'ddplint[runtime]'"


def import_torch() -> object:
    """Import torch without its warning about a missing NumPy (not ours to print)."""
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
        import torch
    return torch
