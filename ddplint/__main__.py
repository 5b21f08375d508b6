"""`python -m ddplint` (and `torchrun -m ddplint ...`) runs the command line."""

from ddplint.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
