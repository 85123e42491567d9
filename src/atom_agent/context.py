"""Runtime configuration: a frozen dataclass used as the graph's `context_schema`."""

from __future__ import annotations

import collections.abc
import dataclasses
import json
import math
import os
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Self

from atom_agent.errors import ConfigError

ENV_PREFIX = "ATOM_"


def _doc(text: str) -> dict[str, str]:
    # LangGraph Studio renders `description` from field metadata.
    return {"description": text}


@dataclass(frozen=True, kw_only=True)
class Context:
    """How one atom_agent run is configured.

    Every field can be set from the environment as ``ATOM_<FIELD>`` (see :meth:`from_env`).
    Model fields take a ``provider:model`` spec (``google_genai:gemini-2.5-pro``) or ``local``;
    an empty per-role model falls back to ``model``, and an empty ``model`` to the default
    resolution (Gemini when a key is set, else the embedded local model).
    """

    # --- models ---
    model: str = field(
        default="", metadata=_doc("Default chat model for every role; empty = auto.")
    )
    """Default model for every role; empty picks the default (see `atom-agent models`)."""
    planner_model: str = field(default="", metadata=_doc("Planner model; empty = `model`."))
    """Model for the planner; empty falls back to `model`."""
    executor_model: str = field(default="", metadata=_doc("Executor model; empty = `model`."))
    """Model for the executor's tool loop; empty falls back to `model`."""
    temperature: float = field(default=0.0, metadata=_doc("Sampling temperature, 0–2."))
    """Sampling temperature passed to every model (0 = deterministic where supported)."""
    model_profile: str = field(
        default="", metadata=_doc("Model profile: small, standard, or empty = auto.")
    )
    """How the agent works with the executor model: ``small`` (whole-file drafts in a fenced
    block, warming retries, no tool loop), ``standard`` (the tool loop), or empty to pick by
    the size the model's name states (≤ 8B is small; the embedded model is small)."""

    base_url: str = field(
        default="", metadata=_doc("OpenAI-compatible server URL for openai: models.")
    )
    """Where ``openai:`` models are served: any OpenAI-compatible server (vLLM, llama.cpp's
    ``llama-server``, LM Studio, Ollama's ``/v1``, a LiteLLM proxy), e.g.
    ``http://127.0.0.1:8080/v1``. No API key is needed for a loopback or private address;
    empty = OpenAI's own API."""

    # --- workspace ---
    workspace: str = field(default="atom_workspace", metadata=_doc("Workspace directory."))
    """Root of the workspace tree (runs, memory, checkpoints)."""
    project_id: str = field(default="default", metadata=_doc("Memory project (isolation unit)."))
    """Long-term memory project; nothing is ever read across projects."""
    repo: str = field(
        default="", metadata=_doc("A project to work in (its folder); empty = a new package.")
    )
    """The user's project: the run works in its own checkout of it (a git worktree on branch
    ``atom/<run-id>``, or a copy) and hands back that branch and a patch; the project's
    working tree is never written. Empty: the run writes a new package in the workspace."""
    test_command: str = field(
        default="", metadata=_doc("The project's test command; empty = detected.")
    )
    """How to run the project's tests (``pytest tests``, ``PYTHONPATH=src pytest``); empty:
    read from its pytest configuration or test folders."""

    # --- loop limits and budgets ---
    max_attempts: int = field(default=3, metadata=_doc("Attempts per step before replan/fail."))
    """Executor attempts per step before the reflector replans or fails the step (1–20)."""
    max_tool_calls: int = field(default=25, metadata=_doc("Tool calls per attempt."))
    """Tool calls the executor may make in one attempt (1–500)."""
    loop_time_factor: float = field(
        default=2.0, metadata=_doc("Tool-loop time per attempt, × the plain answer's; 0 = none.")
    )
    """The tool loop of one attempt may run this many times the seconds the run's plain answer
    took (measured in the same run, on the same model); 0 = no limit. A loop that would cost
    more than a few plain calls must win something: this bounds what it can cost."""
    run_time_factor: float = field(
        default=5.0, metadata=_doc("Run time per plan step, × the plain answer's; 0 = none.")
    )
    """A run may take this many times the seconds its plain answer took, per step of its plan
    (at least 30 s a step); after that no model call starts, and the run hands back what it
    committed, else the plain answer, labelled. 0 = no limit. It bounds what the agent costs
    beside asking once: past it, more samples of a step the model keeps failing rarely win.
    A retry that would not finish before it (less time left than the last attempt took) is
    not started: the step fails then, saying so. A witness it refuses ends the attempt's
    cross-examination, not the attempt: the candidates proven so far decide it."""
    max_plan_steps: int = field(default=12, metadata=_doc("Most steps a plan may have."))
    """Plans with more steps are sent back to the planner (1–50); 1 makes every task one step."""
    max_replans: int = field(default=1, metadata=_doc("Replans per run."))
    """How many times a run may replan after a step exhausts its attempts (0–10)."""
    max_tokens: int | None = field(
        default=None, metadata=_doc("Token budget per run; empty = none.")
    )
    """Total model tokens (input + output) a run may spend; None = unlimited.

    Budgets are checked before every model call (:mod:`atom_agent.budget`): the call a spent
    budget no longer allows is not made, the run ends ``budget_exhausted`` and keeps what it
    committed. The embedded and served models never ask for more tokens than are left."""
    max_cost_usd: float | None = field(default=None, metadata=_doc("Cost budget (USD) per run."))
    """Estimated model cost a run may spend, in USD; None = unlimited."""
    max_wall_seconds: float | None = field(default=None, metadata=_doc("Wall-clock limit per run."))
    """Wall-clock seconds a run may take; None = unlimited (a model call's timeout, and the
    embedded model's decoding, end when they are spent)."""
    context_token_budget: int = field(default=6000, metadata=_doc("Executor prompt token budget."))
    """Token budget of the executor prompt built by tiered context reconstruction (≥ 500)."""
    approve_plan: bool = field(default=False, metadata=_doc("Interrupt for plan approval."))
    """Pause after planning so a human approves or edits the plan."""
    ask_user: bool = field(
        default=True, metadata=_doc("A person answers the run's questions (ask_user tool).")
    )
    """Whether somebody answers the run's questions. False (evaluations; a batch unless its
    settings say a person is there) takes the ask_user tool away: the model decides and
    states what it assumed, and the run never ends waiting on a question."""
    candidate_zero: bool = field(
        default=True, metadata=_doc("Ask the model once for the whole task first.")
    )
    """Start with one plain call of the model for the whole task (candidate zero): its code is
    the first candidate of every step it covers, and replaced only by code that executes
    better; when it meets every check the task states, the task is planned as one step."""
    parallel_calls: int = field(
        default=0, metadata=_doc("Model calls a run may make at once; 0 = auto.")
    )
    """How many model calls that do not depend on each other a run makes at once (the plain
    answer and the contract of a task planned without a call). 0 = auto: 2 for a provider's API
    (it answers requests independently); 1 for the embedded model (one sequence decodes at a
    time), for a server at ``base_url`` (its slots may share one machine: set 2 for one that
    batches well, e.g. on a GPU) and for chat-model objects given to the run."""

    # --- sandbox ---
    sandbox_timeout_s: float = field(default=60.0, metadata=_doc("Wall-clock seconds per run."))
    """Wall-clock limit of one sandboxed run (python file or pytest), in seconds."""
    sandbox_cpu_s: int = field(default=60, metadata=_doc("CPU seconds per sandboxed run."))
    """CPU-time limit (RLIMIT_CPU) of one sandboxed run, in seconds."""
    sandbox_memory_mb: int = field(default=1024, metadata=_doc("Address-space limit (MiB)."))
    """Address-space limit (RLIMIT_AS) of one sandboxed run, in MiB (≥ 64)."""
    sandbox_output_bytes: int = field(default=65536, metadata=_doc("Output kept per run (bytes)."))
    """Bytes of stdout/stderr kept from one sandboxed run; the rest is truncated with a note."""
    sandbox_network: bool = field(default=False, metadata=_doc("Allow network in the sandbox."))
    """Allow network access from sandboxed code (off: `unshare -n` where available)."""

    # --- memory ---
    chroma_url: str = field(default="", metadata=_doc("Chroma server URL; empty = embedded."))
    """URL of a shared Chroma server (`chroma run`); empty uses `<workspace>/memory`."""
    memory_recall_limit: int = field(default=8, metadata=_doc("Memories in the executor prompt."))
    """Long-term memories considered for the executor prompt (0–50; 0: none recalled)."""
    memory_min_confidence: float = field(default=0.5, metadata=_doc("Recall confidence floor."))
    """Memories below this confidence are not recalled into prompts (0–1)."""
    memory_promotion_threshold: float = field(default=0.7, metadata=_doc("Promotion threshold."))
    """Working-memory candidates at or above this importance are promoted to long-term (0–1)."""
    rules_token_budget: int = field(
        default=600, metadata=_doc("Tokens of project rules carried by every call; 0: none.")
    )
    """The project's standing rules (user conventions in force) ride in the task text of every
    call that writes code, within this many tokens (newest rules first; 0 carries none)."""

    prompts: Mapping[str, str] = field(
        default_factory=dict, metadata=_doc("Prompts replaced by name: {NAME: text}.")
    )
    """Your text for any named prompt (``PLANNER_SYSTEM``, ``DRAFT_TASK``, …; the names are
    :func:`atom_agent.prompts.names`, listed with the profiles that send them in
    docs/prompts.md). The built-in text's ``{placeholders}`` are filled in yours too; other
    braces stay as written. The report names the replaced prompts the run sent, and those it
    never sent. ``ATOM_PROMPTS`` takes a JSON object."""
    executor_prompt: str = field(
        default="", metadata=_doc("Executor system prompt; empty = the built-in one.")
    )
    """Shorthand for ``prompts={"EXECUTOR_SYSTEM": …}``: your system prompt for the executor's
    tool loop (``{ambiguity}`` in it becomes the line on questions)."""
    planner_prompt: str = field(
        default="", metadata=_doc("Planner system prompt; empty = the built-in one.")
    )
    """Shorthand for ``prompts={"PLANNER_SYSTEM": …}``: your system prompt for the planner
    (``{max_steps}`` in it becomes ``max_plan_steps``; the plan's JSON schema is sent as
    before)."""

    def prompt_replacements(self) -> dict[str, str]:
        """Every prompt the user replaced, by name (the two shorthands included)."""
        given = {k: v for k, v in self.prompts.items() if v.strip()}
        for name, text in (("EXECUTOR_SYSTEM", self.executor_prompt),
                           ("PLANNER_SYSTEM", self.planner_prompt)):  # fmt: skip
            if text.strip():
                given[name] = text
        return given

    executor_tools: str = field(
        default="", metadata=_doc("Executor tools: comma list, 'all', or empty = auto.")
    )
    """Tools the executor gets: a comma-separated list of names, ``all``, or empty for auto
    (all tools; a lean set of file and test tools for the embedded local model, whose small
    context and grammar-constrained decoding do better with few tools)."""

    def __post_init__(self) -> None:
        """Validate ranges so a bad value fails at construction, naming the field."""
        _check_range(self, "temperature", 0.0, 2.0)
        _check_range(self, "max_attempts", 1, 20)
        _check_range(self, "max_tool_calls", 1, 500)
        _check_range(self, "max_replans", 0, 10)
        _check_range(self, "loop_time_factor", 0.0, 1000.0)
        _check_range(self, "run_time_factor", 0.0, 1000.0)
        _check_range(self, "max_plan_steps", 1, 50)
        _check_range(self, "parallel_calls", 0, 16)
        _check_range(self, "max_tokens", 1, None)
        _check_range(self, "max_cost_usd", 0.0, None)
        _check_range(self, "max_wall_seconds", 0.001, None)
        _check_range(self, "context_token_budget", 500, None)
        _check_range(self, "sandbox_timeout_s", 0.1, 86_400.0)
        _check_range(self, "sandbox_cpu_s", 1, 86_400)
        _check_range(self, "sandbox_memory_mb", 64, None)
        _check_range(self, "sandbox_output_bytes", 1024, None)
        _check_range(self, "memory_recall_limit", 0, 50)
        _check_range(self, "memory_min_confidence", 0.0, 1.0)
        _check_range(self, "memory_promotion_threshold", 0.0, 1.0)
        _check_range(self, "rules_token_budget", 0, 20000)
        if self.model_profile.strip() not in ("", "small", "standard"):
            raise ConfigError(
                f"model_profile: {self.model_profile!r} is not small, standard or empty (auto)"
            )
        if not self.workspace.strip():
            raise ConfigError("workspace: must not be empty")
        if not self.project_id.strip():
            raise ConfigError("project_id: must not be empty")

    def model_for(self, role: str) -> str:
        """The model spec for `role` (planner or executor); '' means auto."""
        if role not in ("planner", "executor"):
            raise ConfigError(f"unknown model role {role!r}: planner or executor")
        specific: str = getattr(self, f"{role}_model")
        return specific or self.model

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> Self:
        """Build a Context from ``ATOM_*`` variables, converting types.

        Args:
            env: the environment to read (default: ``os.environ``).
            **overrides: field values that win over the environment (already typed).

        Raises:
            ConfigError: a variable does not convert or is out of range; the message names it.
        """
        source = os.environ if env is None else env
        hints = _CONTEXT_TYPES
        values: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            var = ENV_PREFIX + f.name.upper()
            if var in source:
                values[f.name] = _convert(var, source[var], hints[f.name])
        unknown = set(overrides) - {f.name for f in dataclasses.fields(cls)}
        if unknown:
            raise ConfigError(f"unknown Context field(s): {', '.join(sorted(unknown))}")
        values.update(overrides)
        try:
            return cls(**values)
        except ConfigError as exc:
            # Name the variable the user has to fix, not only the field.
            name = str(exc).split(":", 1)[0]
            if name in values and name not in overrides:
                raise ConfigError(
                    f"{ENV_PREFIX}{name.upper()}={source[ENV_PREFIX + name.upper()]!r}"
                    f": {str(exc).split(':', 1)[1].strip()}"
                ) from None
            raise

    @classmethod
    def with_env_defaults(cls, env: Mapping[str, str] | None = None) -> type[Self]:
        """This class with the ``ATOM_*`` environment (read now) as its defaults.

        The context schema of a server's graph: LangGraph builds the Context from the
        fields a client sends, so each field the client sends wins (even when it equals the
        built-in default), and each it leaves out takes the server's environment, read once
        when the server loads the graph. Studio shows those effective defaults.

        Raises:
            ConfigError: a variable does not convert or is out of range; the message names it.
        """
        base = cls.from_env(env)
        hints = _CONTEXT_TYPES
        fields = [(f.name, hints[f.name], _default(getattr(base, f.name), f.metadata))
                  for f in dataclasses.fields(cls)]  # fmt: skip
        namespace = {"__doc__": cls.__doc__, "__module__": cls.__module__}
        made = dataclasses.make_dataclass(
            cls.__name__, fields, bases=(cls,), frozen=True, kw_only=True, namespace=namespace
        )
        return typing.cast(type[Self], made)

    def replace(self, **changes: Any) -> Self:
        """A copy with `changes` applied (validated again)."""
        return dataclasses.replace(self, **changes)


def _default(value: Any, metadata: Mapping[str, Any]) -> Any:
    """A field defaulting to `value`; a mapping (``prompts``) by a factory, each its own copy."""
    if isinstance(value, Mapping):
        return field(default_factory=lambda: dict(value), metadata=metadata)
    return field(default=value, metadata=metadata)


_CONTEXT_TYPES = typing.get_type_hints(Context)
"""Context's field types, resolved once (``get_type_hints`` takes milliseconds); the
subclasses (:meth:`Context.with_env_defaults`) add no field."""


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def _convert(var: str, raw: str, hint: Any) -> Any:
    """Convert the string `raw` of variable `var` to the field type `hint`."""
    text = raw.strip()
    args = typing.get_args(hint)
    optional = isinstance(hint, types.UnionType) and type(None) in args
    base = next((a for a in args if a is not type(None)), hint) if optional else hint
    if optional and text.lower() in ("", "none", "null"):
        return None
    try:
        if base is bool:
            if text.lower() in _TRUE:
                return True
            if text.lower() in _FALSE:
                return False
            raise ValueError("expected one of 1/0, true/false, yes/no, on/off")
        if base is int:
            return int(text)
        if base is float:
            return float(text)
        if base is str:
            return raw
        if typing.get_origin(base) in (dict, Mapping, collections.abc.Mapping):
            value = json.loads(text or "{}")
            if not isinstance(value, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in value.items()
            ):
                raise ValueError("expected a JSON object of strings")
            return value
    except ValueError as exc:
        detail = (
            str(exc) if base is bool or not isinstance(base, type) else f"expected {base.__name__}"
        )
        raise ConfigError(f"{var}={raw!r}: {detail}") from None
    raise ConfigError(f"{var}: unsupported field type {hint!r}")  # a new field type needs a case


def _check_range(ctx: Context, name: str, low: float | None, high: float | None) -> None:
    value = getattr(ctx, name)
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{name}: expected a number, got {type(value).__name__} {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        # nan passes every comparison below; inf is no limit (leave the field empty for that).
        raise ConfigError(f"{name}: {value!r} is not a finite number (leave it unset for no limit)")
    if (low is not None and value < low) or (high is not None and value > high):
        bounds = f"≥ {low}" if high is None else f"between {low} and {high}"
        raise ConfigError(f"{name}: {value!r} is out of range (must be {bounds})")
