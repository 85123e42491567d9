"""Documents a task names reach the edit prompt: the passages about the target, within budget."""

from __future__ import annotations

from pathlib import Path

from atom_agent.project.documents import documents_for, named_documents

README = "\n".join(
    ["# Demo", "", "Install it with pip.", ""]
    + [f"Filler line {n} about nothing." for n in range(60)]
    + ["", "## The `pipe` format", "", "Columns are aligned with colons:", "", "|:---|---:|", ""]
)


def test_the_passage_about_the_quoted_term_comes_from_the_named_readme(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text(README)
    (tmp_path / "NOTES.txt").write_text("pipe pipe pipe\n")
    task = "Implement `_pipe_segment` as the README shows for the `pipe` format."
    assert named_documents(tmp_path, task) == [tmp_path / "README.md"]
    text = documents_for(tmp_path, task, "_pipe_segment")
    assert "From `README.md`:" in text and "|:---|---:|" in text
    assert "Filler line 10 " not in text  # only the lines around the hits


def test_a_task_that_names_no_document_gets_none(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text(README)
    assert documents_for(tmp_path, "Implement `_pipe_segment`.", "_pipe_segment") == ""
