"""The `ddplint` command.

`main` handles the two things that must be instant without importing Typer
or LibCST (``--version``; the default subcommand), then hands over to the
Typer application in `ddplint.cli.app`.
"""

from __future__ import annotations

import sys

from ddplint.version import __version__

COMMANDS = ("check", "clean", "doctor", "rule", "server", "version")
_TOP_LEVEL_OPTIONS = ("-h", "--help", "--version", "-V")


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args in (["--version"], ["-V"], ["version"]):
        print(f"ddplint {__version__}")
        return 0
    if not args or (args[0] not in COMMANDS and args[0] not in _TOP_LEVEL_OPTIONS):
        args.insert(0, "check")  # `ddplint PATH...` is `ddplint check PATH...`
    from ddplint.cli.app import app

    try:
        app(args=args, prog_name="ddplint", standalone_mode=True)
    except SystemExit as exc:
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 2)
    return 0
