"""The prompt both the planner and the executor of a run on a project send."""

from atom_agent.prompts import register

PROJECT_SYSTEM = register(
    "PROJECT_SYSTEM",
    """\
You are a careful Python developer working in an existing project. You change one definition \
at a time, keep its signature, and follow the project's own style and helpers.""",
)
"""The system message of every model call of a run on a project."""
