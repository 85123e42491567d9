"""Pytest outcome counts from a junit xml report, or from the summary line when there is none."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ElementTree
from pathlib import Path

from atom_agent.sandbox.base import TestCounts

_SUMMARY_ITEM = re.compile(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed)\b")
_SUMMARY_LINE = re.compile(r"^=*\s*(?:\d+ \w+(?:, )?)+.* in [\d.]+s", re.MULTILINE)


def counts_from_junit(path: Path) -> TestCounts | None:
    """Counts from pytest's ``--junitxml`` file; None when missing or unreadable.

    Pytest records collection errors as ``error`` testcases, so an import error in a test file
    counts as an error rather than vanishing.
    """
    try:
        root = ElementTree.parse(path).getroot()
    except (OSError, ElementTree.ParseError):
        return None
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    if not suites:
        return None
    tests = failures = errors = skipped = 0
    for suite in suites:
        tests += int(suite.get("tests", 0))
        failures += int(suite.get("failures", 0))
        errors += int(suite.get("errors", 0))
        skipped += int(suite.get("skipped", 0))
    return TestCounts(
        passed=max(0, tests - failures - errors - skipped),
        failed=failures,
        errors=errors,
        skipped=skipped,
    )


def counts_from_output(output: str) -> TestCounts | None:
    """Counts from the last pytest summary line (``3 passed, 1 failed in 0.12s``), if any.

    ``xfailed`` counts as skipped and ``xpassed`` as passed, as in the junit report.
    """
    lines = [m.group(0) for m in _SUMMARY_LINE.finditer(output)]
    if not lines:
        return None
    found: dict[str, int] = {}
    for number, word in _SUMMARY_ITEM.findall(lines[-1]):
        key = "errors" if word.startswith("error") else word
        found[key] = found.get(key, 0) + int(number)
    return TestCounts(
        passed=found.get("passed", 0) + found.get("xpassed", 0),
        failed=found.get("failed", 0),
        errors=found.get("errors", 0),
        skipped=found.get("skipped", 0) + found.get("xfailed", 0),
    )
