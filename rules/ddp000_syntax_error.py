"""DDP000 syntax-error."""

from __future__ import annotations

from ddplint.model import Severity
from ddplint.rule import Rule


class SyntaxError_(Rule):
    """
    ## What it does

    Reports a file that Python cannot parse: a syntax error, bytes that are
    not valid in the file's encoding (UTF-8 unless a PEP 263 coding cookie
    says otherwise), or a NUL byte. The position is CPython's own, from the
    interpreter that runs ddplint, so the verdict matches `python file.py`.

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
