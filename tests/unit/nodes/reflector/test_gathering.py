"""What the reflector gathers besides the contract: own tests the tool loop wrote."""

from __future__ import annotations

from pathlib import Path

from atom_agent.nodes.reflector.gathering import _extra_tests


def test_a_test_file_the_tool_loop_wrote_beside_the_checks_is_read_as_own_tests(
    tmp_path: Path,
) -> None:
    (tmp_path / "test.py").write_text(
        "from impl import add\n\n\ndef test_c():\n    assert add(1, 1) == 2\n"
    )
    (tmp_path / "test_mine.py").write_text(
        "from impl import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    )
    found = _extra_tests(tmp_path, ["add"])
    # test.py is the step's checks (or run as it is): only the other file is read back.
    assert [(c.describe(), c.origin) for c in found] == [("add(2, 3) == 5", "own")]
