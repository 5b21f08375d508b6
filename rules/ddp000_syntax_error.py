"""DDP000 syntax-error."""

from __future__ import annotations

from ddplint.model import Severity
from ddplint.rule import Rule


class SyntaxError_(Rule):
    """
    ## What it does

    Reports a file that Python rejects before running it: a syntax error, an
    error CPython's compiler raises after parsing (`return`, `yield` or
    `await` outside a function, `break` outside a loop, a duplicate argument,
    `nonlocal` at module level, `global` after a use, `from m import *` in a
    function, a walrus rebinding a comprehension variable, a misplaced
    `from __future__` import), bytes that are not valid in the file's
    encoding (UTF-8 unless a PEP 263 coding cookie says otherwise), a cookie
    naming a codec that is not a text encoding (`hex`, `rot13`, `zlib`), or a
    NUL byte. The verdict and position are CPython's own `compile()`'s (which
    executes nothing), from the interpreter that runs ddplint, so it matches
    `python file.py`.

    ## Why is this bad?

    A file that does not parse cannot be checked by any other rule, and it
    fails the job the moment it is imported, usually on every rank of a job
    that has already waited for its allocation.

    ## Example

    ```python
    def train(model, loader)
        for batch in loader:
            model(batch)
    ```

    ## Use instead

    ```python
    def train(model, loader):
        for batch in loader:
            model(batch)
    ```

    ## Fix safety

    No automatic fix: only the author knows what the code should say.

    ## References

    - [PEP 263 – Defining Python Source Code Encodings](https://peps.python.org/pep-0263/)
    """

    code = "DDP000"
    name = "syntax-error"
    severity = Severity.ERROR
    summary = "The file cannot be parsed, so nothing else in it was checked."
    tags = ("correctness",)
