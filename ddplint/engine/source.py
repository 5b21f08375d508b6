"""From bytes to checked source text: PEP 263 decoding and CPython's verdict.

CPython's own parser and compiler decide what a syntax error is (DDP000), so
ddplint agrees with `python file.py` (and `compile()`) whichever rules are
enabled, and LibCST is never handed a file Python itself rejects.
"""

from __future__ import annotations

import ast
import io
import tokenize
import warnings
from dataclasses import dataclass

from ddplint.model import Span


@dataclass(frozen=True)
class SourceProblem:
    """Why a file is not valid Python source, and where."""

    message: str
    span: Span


class SourceError(Exception):
    """The bytes cannot be decoded as Python source."""

    def __init__(self, problem: SourceProblem) -> None:
        super().__init__(problem.message)
        self.problem = problem


def decode_source(data: bytes) -> str:
    """Decode per PEP 263 (BOM, coding cookie, else UTF-8); raise SourceError."""
    try:
        encoding, read = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:  # a bad cookie, or undecodable first lines
        encoding, read = "utf-8", []
        try:
            data.decode(encoding)
        except UnicodeDecodeError:
            pass  # report the exact byte below
        else:
            line = exc.lineno or 1
            raise SourceError(SourceProblem(str(exc.msg), Span(line, 1, line, 2))) from None
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        line_start = data.rfind(b"\n", 0, exc.start) + 1
        column = _column(data[line_start : exc.start], encoding)
        byte = data[exc.start : exc.start + 1].hex()
        message = f"file is not valid {encoding}: cannot decode byte 0x{byte} ({exc.reason})"
        if encoding == "utf-8":
            message += "; add a PEP 263 coding cookie or re-encode the file as UTF-8"
        raise SourceError(SourceProblem(message, Span(line, column, line, column + 1))) from None
    except (LookupError, ValueError):  # a codec that is not a text encoding (hex, rot13, zlib) or cannot decode at all
        line = max(len(read), 1)  # the cookie is on the last line detect_encoding read
        raise SourceError(SourceProblem(f"encoding problem: {encoding}", Span(line, 1, line, 2))) from None


def _column(prefix: bytes, encoding: str) -> int:
    """The 1-based column after `prefix` (the bytes of a line before a bad
    one), in characters where the codec can say, else in bytes (`idna`
    supports no error handler)."""
    try:
        return len(prefix.decode(encoding, errors="replace")) + 1
    except (UnicodeError, LookupError):
        return len(prefix) + 1


def syntax_problem(text: str, path: str) -> SourceProblem | None:
    """CPython's syntax error for `text`, or None if it compiles: the check
    `python_ast` makes, without the tree (one compile of the text builds no
    Python objects for its nodes: about half the cost of a tree and its compile)."""
    nul = _null_byte(text)
    if nul is not None:
        return nul
    with warnings.catch_warnings():  # the user's invalid escapes are not ours to print
        warnings.simplefilter("ignore")
        return _compiled_text(text, path)


def python_ast(text: str, path: str) -> ast.Module | SourceProblem:
    """CPython's own tree of `text` (cheap next to LibCST), or the error
    `compile()` raises for it: the parser's, or the compiler's (a duplicate
    argument, `return` outside a function, `nonlocal` at module level, a
    misplaced future import, ...)."""
    nul = _null_byte(text)
    if nul is not None:
        return nul
    with warnings.catch_warnings():  # the user's invalid escapes are not ours to print
        warnings.simplefilter("ignore")
        try:
            tree = compile(text, path, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
        except SyntaxError as exc:
            return SourceProblem(_describe(exc), _error_span(text, exc))
        except (RecursionError, MemoryError) as exc:  # what `python file.py` reports too
            return SourceProblem(f"{type(exc).__name__}: {exc}", Span(1, 1, 1, 2))
        problem = _compiler_problem(tree, text, path)
    return tree if problem is None else problem


def _null_byte(text: str) -> SourceProblem | None:
    nul = text.find("\0")
    return None if nul < 0 else SourceProblem("source code cannot contain null bytes", _offset_span(text, nul))


def _compiler_problem(tree: ast.Module, text: str, path: str) -> SourceProblem | None:
    """The error CPython's compiler raises after parsing (symbol table and
    code generation), or None. Compiling executes nothing; starting from
    the tree already parsed saves parsing twice."""
    try:
        compile(tree, path, "exec", dont_inherit=True)
    except SyntaxError as exc:
        return SourceProblem(_describe(exc), _error_span(text, exc))
    except (RecursionError, ValueError):
        # Checking a Python tree recurses at the interpreter's recursion limit,
        # compiling source text at the compiler's own (about three times as
        # deep), so a deep tree the parser built may fail the check alone:
        # the text decides, as for `python file.py`.
        return _compiled_text(text, path)
    except MemoryError as exc:
        return SourceProblem(f"{type(exc).__name__}: {exc}", Span(1, 1, 1, 2))
    return None


def _compiled_text(text: str, path: str) -> SourceProblem | None:
    """The error compiling `text` raises (parser or compiler), or None."""
    try:
        compile(text, path, "exec", dont_inherit=True)
    except SyntaxError as exc:
        return SourceProblem(_describe(exc), _error_span(text, exc))
    except (RecursionError, MemoryError) as exc:  # what `python file.py` reports too
        return SourceProblem(f"{type(exc).__name__}: {exc}", Span(1, 1, 1, 2))
    return None


def _describe(exc: SyntaxError) -> str:
    name = type(exc).__name__
    return exc.msg if name == "SyntaxError" else f"{name}: {exc.msg}"


def _offset_span(text: str, offset: int) -> Span:
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return Span(line, column, line, column + 1)


def _error_span(text: str, exc: SyntaxError) -> Span:
    lines = text.splitlines() or [""]
    line = min(max(exc.lineno or 1, 1), len(lines))
    width = len(lines[line - 1])
    column = min(max(exc.offset or 1, 1), width + 1)
    end_line = getattr(exc, "end_lineno", None) or line
    end_column = getattr(exc, "end_offset", None) or column + 1
    if (end_line, end_column) <= (line, column) or end_line > len(lines):
        end_line, end_column = line, column + 1
    return Span(line, column, end_line, end_column)
