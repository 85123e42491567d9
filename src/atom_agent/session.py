"""The session context every memory and tool operation runs in."""

from __future__ import annotations

import re
from dataclasses import dataclass

from atom_agent.errors import ConfigError

_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")


@dataclass(frozen=True, kw_only=True)
class SessionContext:
    """Who is acting: the isolation boundary (project) and the provenance of what they write.

    `project_id` isolates long-term memory: nothing reads or changes another project's records.
    `session_id` scopes working memory. `run_id` / `step_id` / `attempt` are provenance for what
    is written inside a graph run; they are None outside one.
    """

    session_id: str
    project_id: str = "default"
    run_id: str | None = None
    step_id: str | None = None
    attempt: int | None = None

    def __post_init__(self) -> None:
        """Reject ids that could not be safe metadata values or path parts."""
        for name in ("session_id", "project_id", "run_id", "step_id"):
            value = getattr(self, name)
            if value is None and name in ("run_id", "step_id"):
                continue
            if not isinstance(value, str) or not _ID.match(value):
                raise ConfigError(
                    f"{name}: {value!r} is not a valid id (1–128 chars: letters, digits, . _ : -; "
                    f"starting with a letter or digit)"
                )
        if self.attempt is not None and (
            isinstance(self.attempt, bool) or not isinstance(self.attempt, int) or self.attempt < 1
        ):
            raise ConfigError(f"attempt: {self.attempt!r} must be a positive integer or None")
