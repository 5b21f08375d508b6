"""What GitHub code scanning requires of an uploaded SARIF file, beyond the schema.

From GitHub's documentation ("SARIF support for code scanning", and the
upload limits of the code scanning REST API / "SARIF results exceed one or
more limits"):

- ``version`` 2.1.0 and a ``runs`` array; at most 20 runs per file, 25,000
  results and 25,000 rules per run, 100 tool extensions per run, 1,000
  locations per result, 10,000 thread-flow locations per result, 20 tags per
  rule (only 10 are kept: we allow 10); 10 MB gzip-compressed.
- ``tool.driver.name`` is required; every ``ruleId`` names a rule of the
  driver (``ruleIndex``, when present, points at it); rule ids are unique.
- A rule's ``shortDescription.text`` and ``fullDescription.text`` are at most
  1,024 characters; ``defaultConfiguration.level`` is note/warning/error;
  ``properties.precision`` is very-high/high/medium/low,
  ``properties.problem.severity`` error/warning/recommendation,
  ``properties.security-severity`` a number from 0.0 to 10.0.
- A result has ``message.text`` and **at least one location**, each with a
  ``physicalLocation`` whose ``artifactLocation.uri`` is relative to the
  repository root (or to a ``uriBaseId`` the run defines), or an absolute
  ``file://`` URI; region lines and columns start at 1.
- ``partialFingerprints`` let code scanning track an alert across commits
  (without them an API upload shows duplicates).
- Related locations are clickable only when the message links them,
  ``[text](id)`` with the related location's ``id`` (SARIF §3.11.6).
- ``automationDetails.id`` is ``category/run-id``: what precedes the last
  ``/`` is the category, so an id without ``/`` is a run id in the empty
  category (and two such uploads supersede each other).

`code_scanning_problems` lists every violation; `assert_code_scanning_accepts`
fails with them.
"""

from __future__ import annotations

import gzip
import json
import re
from typing import Any, Iterator

MAX_RUNS = 20
MAX_RESULTS = 25_000
MAX_RULES = 25_000
MAX_EXTENSIONS = 100
MAX_LOCATIONS = 1_000
MAX_THREAD_FLOW_LOCATIONS = 10_000
MAX_TAGS = 10  # 20 accepted, only 10 kept
MAX_DESCRIPTION = 1_024
MAX_GZIP_BYTES = 10 * 2**20

LEVELS = ("none", "note", "warning", "error")
PRECISIONS = ("very-high", "high", "medium", "low")
PROBLEM_SEVERITIES = ("error", "warning", "recommendation")

#: An embedded link of a plain-text message: [text](id), brackets in the text
#: escaped with a backslash; the opening bracket not itself escaped.
_LINK = re.compile(r"(?<!\\)(?:\\\\)*\[((?:[^\\\[\]]|\\.)*)\]\((\d+)\)")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def message_links(text: str) -> list[tuple[str, int]]:
    """The embedded links of a plain-text SARIF message: (link text, target id)."""
    return [(m.group(1), int(m.group(2))) for m in _LINK.finditer(text)]


def code_scanning_problems(log: dict[str, Any]) -> list[str]:
    """Every way `log` breaks GitHub code scanning's documented constraints."""
    problems: list[str] = []
    if log.get("version") != "2.1.0":
        problems.append(f"version is {log.get('version')!r}, not 2.1.0")
    if len(gzip.compress(json.dumps(log).encode("utf-8"))) > MAX_GZIP_BYTES:
        problems.append("larger than 10 MB gzip-compressed")
    runs = log.get("runs")
    if not isinstance(runs, list):
        return [*problems, "no runs array"]
    if len(runs) > MAX_RUNS:
        problems.append(f"{len(runs)} runs > {MAX_RUNS}")
    for r, run in enumerate(runs):
        problems.extend(f"runs[{r}]: {p}" for p in _run_problems(run))
    return problems


def assert_code_scanning_accepts(log: dict[str, Any]) -> None:
    """Fail with every violation of GitHub code scanning's constraints."""
    problems = code_scanning_problems(log)
    assert not problems, "\n".join(problems[:30])


def _run_problems(run: dict[str, Any]) -> Iterator[str]:
    driver = run.get("tool", {}).get("driver", {})
    if not driver.get("name"):
        yield "tool.driver.name is missing"
    if len(run.get("tool", {}).get("extensions", [])) > MAX_EXTENSIONS:
        yield f"more than {MAX_EXTENSIONS} tool extensions"
    rules = driver.get("rules", [])
    ids = [rule.get("id") for rule in rules]
    if len(rules) > MAX_RULES:
        yield f"{len(rules)} rules > {MAX_RULES}"
    if len(set(ids)) != len(ids):
        yield "duplicate rule ids"
    for rule in rules:
        yield from (f"rule {rule.get('id')}: {p}" for p in _rule_problems(rule))
    bases = set(run.get("originalUriBaseIds", {})) | {"%SRCROOT%"}
    results = run.get("results")
    if not isinstance(results, list):
        yield "no results array"
        results = []
    if len(results) > MAX_RESULTS:
        yield f"{len(results)} results > {MAX_RESULTS}"
    for i, result in enumerate(results):
        yield from (f"results[{i}] ({result.get('ruleId')}): {p}" for p in _result_problems(result, ids, bases))
    automation = run.get("automationDetails")
    if automation is not None and "/" not in automation.get("id", ""):
        yield f"automationDetails.id {automation.get('id')!r} has no '/': a run id in the empty category"


def _rule_problems(rule: dict[str, Any]) -> Iterator[str]:
    if not rule.get("id"):
        yield "no id"
    for key in ("shortDescription", "fullDescription"):
        text = rule.get(key, {}).get("text")
        if key == "shortDescription" and not text:
            yield f"{key}.text is missing"
        if text is not None and not 0 < len(text) <= MAX_DESCRIPTION:
            yield f"{key}.text has {len(text)} characters (1 to {MAX_DESCRIPTION})"
    level = rule.get("defaultConfiguration", {}).get("level", "warning")
    if level not in LEVELS:
        yield f"defaultConfiguration.level {level!r}"
    properties = rule.get("properties", {})
    tags = properties.get("tags", [])
    if not isinstance(tags, list) or len(tags) > MAX_TAGS or not all(isinstance(t, str) for t in tags):
        yield f"tags {tags!r}: at most {MAX_TAGS} strings"
    if properties.get("precision", "high") not in PRECISIONS:
        yield f"precision {properties['precision']!r} not one of {PRECISIONS}"
    if properties.get("problem.severity", "warning") not in PROBLEM_SEVERITIES:
        yield f"problem.severity {properties['problem.severity']!r}"
    if "security-severity" in properties:
        try:
            ok = 0.0 <= float(properties["security-severity"]) <= 10.0
        except ValueError:
            ok = False
        if not ok:
            yield f"security-severity {properties['security-severity']!r}"


def _result_problems(result: dict[str, Any], ids: list[str], bases: set[str]) -> Iterator[str]:
    rule_id = result.get("ruleId")
    if rule_id not in ids:
        yield f"ruleId {rule_id!r} is no rule of the driver"
    index = result.get("ruleIndex")
    if index is not None and not (0 <= index < len(ids) and ids[index] == rule_id):
        yield f"ruleIndex {index} does not point at {rule_id!r}"
    text = result.get("message", {}).get("text")
    if not text:
        yield "message.text is missing"
    if result.get("level", "warning") not in LEVELS:
        yield f"level {result.get('level')!r}"
    locations = result.get("locations") or []
    if not locations:
        yield "no location (code scanning rejects the upload: 'expected at least one location')"
    if len(locations) > MAX_LOCATIONS:
        yield f"{len(locations)} locations > {MAX_LOCATIONS}"
    for location in locations:
        yield from _location_problems(location, bases)
    related = result.get("relatedLocations", [])
    related_ids = [location.get("id") for location in related]
    for location in related:
        yield from (f"related location {location.get('id')}: {p}" for p in _location_problems(location, bases))
    if len(set(related_ids)) != len(related_ids) or None in related_ids:
        yield f"related locations need distinct ids, got {related_ids}"
    linked = {target for _, target in message_links(text or "")}
    if linked - set(related_ids):
        yield f"the message links {sorted(linked - set(related_ids))}, which no related location has as id"
    if set(related_ids) - linked - {None}:
        yield f"related locations {sorted(set(related_ids) - linked - {None})} are not linked from the message"
    fingerprints = result.get("partialFingerprints")
    if not fingerprints or not all(isinstance(v, str) and v for v in fingerprints.values()):
        yield "no partialFingerprints (alerts cannot be tracked across commits)"
    for flow in result.get("codeFlows", []):
        count = sum(len(t.get("locations", [])) for t in flow.get("threadFlows", []))
        if count > MAX_THREAD_FLOW_LOCATIONS:
            yield f"{count} thread-flow locations > {MAX_THREAD_FLOW_LOCATIONS}"
    for suppression in result.get("suppressions", []):
        if suppression.get("kind") not in ("inSource", "external"):
            yield f"suppression kind {suppression.get('kind')!r}"


def _location_problems(location: dict[str, Any], bases: set[str]) -> Iterator[str]:
    physical = location.get("physicalLocation")
    if not physical:
        yield "no physicalLocation"
        return
    artifact = physical.get("artifactLocation", {})
    uri = artifact.get("uri")
    if not uri:
        yield "no artifactLocation.uri"
    elif _SCHEME.match(uri):
        if not uri.startswith("file:") or artifact.get("uriBaseId"):
            yield f"absolute URI {uri!r}: only file:// without uriBaseId"
    else:
        if uri.startswith("/") or uri.split("/")[0] == "..":
            yield f"URI {uri!r} is not relative to the repository root"
        base = artifact.get("uriBaseId")
        if base is not None and base not in bases:
            yield f"uriBaseId {base!r} is not defined by the run"
    region = physical.get("region")
    if region is not None:
        start = region.get("startLine")
        if not isinstance(start, int) or start < 1:
            yield f"region.startLine {start!r}"
        if region.get("startColumn", 1) < 1 or region.get("endLine", start or 1) < (start or 1):
            yield f"region {region}"
