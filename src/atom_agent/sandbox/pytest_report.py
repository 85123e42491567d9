"""Pytest outcome counts from a junit xml report."""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from pathlib import Path

from atom_agent.sandbox.base import TestCounts


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
