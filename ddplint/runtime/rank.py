"""Entry point of a rank started by `ddplint.runtime.launch` (not for users:
they run `ddplint doctor`, or `torchrun -m ddplint doctor`)."""

from __future__ import annotations

import os

from ddplint.runtime import import_torch
from ddplint.runtime.context import REQUEST_VARIABLE, DoctorRequest
from ddplint.runtime.session import run_rank


def main() -> None:
    """Run the rank the launcher's variables describe; exits with its status."""
    import_torch()
    raise SystemExit(run_rank(DoctorRequest.from_json(os.environ[REQUEST_VARIABLE])))


if __name__ == "__main__":
    main()
