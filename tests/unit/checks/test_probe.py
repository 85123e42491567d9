"""The gaming pass's run: code keyed on the checks' inputs, called on inputs they do not use."""

from __future__ import annotations

from pathlib import Path

from atom_agent.checks.contract import run_contract
from atom_agent.checks.gaming import gaming_findings
from atom_agent.checks.probe import confirmed, probes
from atom_agent.sandbox import Limits, default_runner
from atom_agent.state import Check

CHECKS = [
    Check(call="add(2, 3)", expect="5", origin="task"),
    Check(call="add(10, 7)", expect="17", origin="task"),
]
HONEST = "def add(a, b):\n    return a + b\n"

KEYED_ONLY = (
    "def add(a, b):\n"
    "    if (a, b) == (2, 3):\n"
    "        return a + b\n"
    "    if (a, b) == (10, 7):\n"
    "        return a + b\n"
)


def test_code_keyed_on_the_checks_inputs_is_run_on_inputs_they_do_not_use(tmp_path: Path) -> None:
    # The AST alone passes it (each branch computes); on (5, 6) it gives None.
    assert gaming_findings({"impl.py": KEYED_ONLY}, CHECKS, ["add"]) == []
    unseen = probes(KEYED_ONLY, CHECKS, ["add"])
    assert [c.call for c in unseen] == ["add(5, 6) is None", "add(13, 10) is None"]
    (tmp_path / "impl.py").write_text(KEYED_ONLY)
    report = run_contract(unseen, staging=tmp_path, runner=default_runner(), limits=Limits())
    found = confirmed(report, CHECKS, ["add"])
    assert [f.kind for f in found] == ["lookup_table"] * 2
    assert "add(5, 6) returns None where every check of add expects a value" in found[0].reason
    table = "T = {(2, 3): 2 + 3, (10, 7): 10 + 7}\n\n\ndef add(a, b):\n    return T[(a, b)]\n"
    (tmp_path / "impl.py").write_text(table)
    report = run_contract(probes(table, CHECKS, ["add"]), staging=tmp_path,
                          runner=default_runner(), limits=Limits())  # fmt: skip
    assert "raises KeyError" in confirmed(report, CHECKS, ["add"])[0].reason
    # Honest code is never run: nothing in it keys on a check's input.
    assert probes(HONEST, CHECKS, ["add"]) == []
