"""Typed exceptions: programming and configuration errors raise these; model-fixable mistakes don't.

A mistake the model can fix (a missing file, a bad tool argument) goes back to it as an error tool
result. Everything here is for the caller: a bad configuration, a missing credential, a broken
install, a call without a session.
"""

from __future__ import annotations

from typing import Any


class AtomAgentError(Exception):
    """Base class of every error atom_agent raises on purpose."""


# --- configuration -------------------------------------------------------------------------------


class ConfigError(AtomAgentError, ValueError):
    """A configuration value is missing, malformed or out of range."""


class InvalidInputError(AtomAgentError, ValueError):
    """A task, run id or answer given to a run is unusable; the message says why."""


# --- models --------------------------------------------------------------------------------------


class ModelError(AtomAgentError):
    """A chat model cannot be resolved, loaded or called."""


class ModelSpecError(ModelError, ValueError):
    """A model spec string is malformed or names an unknown provider."""


class MissingCredentialsError(ModelError, ConfigError):
    """A provider needs an API key that is not set; names the variable to set."""

    def __init__(self, provider: str, variables: tuple[str, ...]) -> None:
        self.provider = provider
        self.variables = variables
        names = " or ".join(variables)
        super().__init__(
            f"provider {provider!r} needs an API key: set {names} in the environment "
            f"(or choose another model with --model / ATOM_MODEL, e.g. 'local')"
        )


class ModelUnavailableError(ModelError, ConfigError):
    """The requested model is not installed here (e.g. the `local` extra is missing).

    A configuration error: the run fails at once with the fix, never as advice to the model.
    """


class ModelIntegrityError(ModelError):
    """Model weights failed their sha256 check; they are never loaded."""


class ContextWindowError(ModelError):
    """The prompt does not fit the model's context window (nothing was generated)."""


# --- budgets -------------------------------------------------------------------------------------


class BudgetExhaustedError(AtomAgentError):
    """A run's token, cost or wall-clock budget does not allow the model call being made.

    Raised before the call (nothing was asked), or by a model whose reply the budget cut
    short (`reply` holds what it said, for its token usage). The node wrapper catches it:
    the node ends, what the run committed stays, and the run finishes ``budget_exhausted``.
    Not a :class:`ModelError`: no caller may treat it as a reply that failed and try again.
    """

    def __init__(self, reason: str, *, reply: Any = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.reply = reply


class TimeLimitReached(BudgetExhaustedError):
    """The run's time limit beside its plain answer refuses a model call (it asked nothing).

    Unlike the hard budgets (tokens, cost, wall clock), the time limit refuses model calls
    only: work that needs none goes on. A caller drawing optional samples (witnesses, whole-
    task samples) stops drawing on it and proves what it has; anywhere else it ends the node
    as any budget does.
    """


# --- memory --------------------------------------------------------------------------------------


class MemoryStoreError(AtomAgentError):
    """The long-term memory store failed or was used without a session context."""


class MissingSessionError(MemoryStoreError):
    """A memory operation was called without a session context (`SessionContext`)."""


class MemoryValidationError(MemoryStoreError, ValueError):
    """A memory argument is invalid (empty content, unknown type, limit out of range…).

    The memory tools turn it into an error tool result the model can act on.
    """


class MemoryNotFoundError(MemoryStoreError, LookupError):
    """No memory with that id in the caller's project (another project's id is never found)."""

    def __init__(self, memory_id: str, what: str = "memory") -> None:
        self.memory_id = memory_id
        super().__init__(f"{what} {memory_id!r} not found in this project")


class EmbeddingError(MemoryStoreError):
    """The offline embedding model or its tokenizer is missing or corrupt."""


# --- workspace, sandbox and tools ---------------------------------------------------------------


class WorkspaceError(AtomAgentError):
    """The workspace tree is missing, corrupt, or an operation on it is invalid."""


class SandboxError(AtomAgentError):
    """The sandbox runner could not start or supervise a process."""


class WorkspaceNotFoundError(WorkspaceError, LookupError):
    """A run, step or attempt that was asked for does not exist in the workspace tree."""


class NoCheckpointError(WorkspaceError):
    """A run has no checkpoint to resume from (killed before its first one)."""


class CorruptFileError(WorkspaceError):
    """A workspace file exists but cannot be read as what it should be (names the file)."""


class LockedError(WorkspaceError):
    """Another process holds the workspace run or batch file; the message names it."""


class EnvironmentFailure(WorkspaceError):
    """The machine refused a write or a read (disk full, read-only, damaged file); says the fix."""


class SchemaVersionError(WorkspaceError):
    """A workspace JSON file has no or an unsupported ``schema_version``."""


class CommitError(WorkspaceError):
    """A step's staging area cannot be promoted (missing staging, dependency not committed)."""


class SandboxUnavailableError(SandboxError):
    """The sandbox cannot run here (e.g. a required isolation feature is missing)."""


class ToolConfigError(AtomAgentError, ValueError):
    """Tools were wired wrongly (an agent run without the context its tools read from)."""
