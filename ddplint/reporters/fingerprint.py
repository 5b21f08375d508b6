"""Finding fingerprints that survive edits elsewhere in the file.

A fingerprint hashes the rule, the file's repository-relative path, the
anchor line's text with whitespace normalised, and the finding's index among
findings with that same rule and text in that file. Inserting lines above a
finding changes its line number but not its fingerprint; two identical lines
get distinct fingerprints. GitHub code scanning uses them to track an alert
across commits.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from typing import Callable, Iterable

from ddplint.model import Finding


def fingerprints(findings: Iterable[Finding], path_of: Callable[[Finding], str]) -> list[str]:
    """One fingerprint per finding, in the given (sorted) order."""
    seen: Counter[tuple[str, str, str]] = Counter()
    result = []
    for finding in findings:
        key = (finding.rule, path_of(finding), " ".join(finding.snippet.split()))
        index = seen[key]
        seen[key] += 1
        text = "\0".join((*key, str(index)))
        digest = hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()  # a name's own bytes
        result.append(digest[:32])
    return result
