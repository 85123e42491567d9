"""A run's budgets, checked before every model call: a callback handler the node wrapper sets.

Every model call of a run goes through LangChain's callback manager, so one handler sees them
all: the plain answer, task samples, drafts, witnesses, the plan and contract, and
every turn of the tool loop. :class:`RunBudget` is that handler (``raise_error = True``): it
refuses a call in ``on_chat_model_start`` when the run's token, cost or wall-clock budget is
spent, and counts each reply's usage in ``on_llm_end``. The graph's node wrapper
(:func:`atom_agent.nodes.common.within_budget`) makes one per node run from the Context and
the state (the run's start and the usage it had so far, also after a resume) and sets it with
:func:`watching`; LangChain adds it to every call made inside (a configure hook, as LangSmith's
tracer is added), whichever model, runnable or agent makes it. Models that can take less than
they were asked for (the embedded model, served ``openai:`` models) find it with
:func:`budget_of` and cap the call's ``max_tokens`` and time to what is left.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.tracers.context import register_configure_hook

from atom_agent.errors import BudgetExhaustedError, TimeLimitReached
from atom_agent.usage import ModelCallHandler, usage_of

wall_clock: Callable[[], float] = time.time
"""The clock budgets are measured on (Unix seconds); tests replace it with a fake one."""


def now() -> float:
    """The time on :data:`wall_clock`: a run's ``started_at`` and every budget check use it."""
    return wall_clock()


class RunBudget(ModelCallHandler):
    """A run's budgets and what it spent: refuses the model call the budget no longer allows.

    Args:
        max_tokens: tokens (input + output) the run may spend; None: no limit.
        max_cost_usd: estimated cost the run may spend; None: no limit.
        max_wall_seconds: seconds since `started_at` the run may take; None: no limit.
        started_at: when the run started (:func:`now`'s clock); None: now.
        used: the run's usage so far (the state's ``usage``: tokens, cost), counted on top.
        calls_until: when the run's time relative to its plain answer is spent (:func:`now`'s
            clock): no model call starts after it, and a call under way finishes; None: no
            such limit.
        calls_until_why: that limit described (for the stop reason).
    """

    raise_error = True
    """A refusal raised in ``on_chat_model_start`` stops the call (LangChain re-raises it)."""

    def __init__(
        self,
        *,
        max_tokens: int | None = None,
        max_cost_usd: float | None = None,
        max_wall_seconds: float | None = None,
        started_at: float | None = None,
        used: Mapping[str, float] | None = None,
        calls_until: float | None = None,
        calls_until_why: str = "",
    ) -> None:
        super().__init__()
        self.max_tokens = max_tokens
        self.max_cost_usd = max_cost_usd
        self.max_wall_seconds = max_wall_seconds
        self.started_at = now() if started_at is None else started_at
        self.calls_until = calls_until
        self.calls_until_why = calls_until_why
        base = used or {}
        self._base_tokens = int(base.get("total_tokens", 0))
        self._base_cost = float(base.get("cost_usd", 0.0))
        self.spent: dict[str, float] = {}
        """Usage of the calls counted here (the keys of the state's ``usage``)."""
        self._names: dict[UUID, str] = {}
        self._lock = threading.Lock()

    @property
    def limited(self) -> bool:
        """Whether any budget is set (a run without one needs no handler)."""
        limits = (self.max_tokens, self.max_cost_usd, self.max_wall_seconds, self.calls_until)
        return any(v is not None for v in limits)

    def tokens(self) -> int:
        """Tokens the run has spent: what it had, and the calls counted since."""
        with self._lock:
            return self._base_tokens + int(self.spent.get("total_tokens", 0))

    def cost(self) -> float:
        """Estimated USD the run has spent."""
        with self._lock:
            return self._base_cost + float(self.spent.get("cost_usd", 0.0))

    def elapsed(self) -> float:
        """Seconds since the run started."""
        return now() - self.started_at

    def tokens_left(self) -> int | None:
        """Tokens the next call may use at most (None: no token budget)."""
        return None if self.max_tokens is None else max(0, self.max_tokens - self.tokens())

    def deadline(self) -> float | None:
        """When the wall-clock budget is spent, on :func:`now`'s clock (None: no such budget)."""
        return None if self.max_wall_seconds is None else self.started_at + self.max_wall_seconds

    def exhausted(self, *, calls: bool = True) -> str | None:
        """The budget the run has used up, described with its figures, or None.

        `calls`: the time limit counts too. It refuses model calls only: work that makes none
        (running a step's checks on code it has, committing it) goes on after it.
        """
        if self.max_tokens is not None and self.tokens() >= self.max_tokens:
            return f"token budget: {self.tokens()} of {self.max_tokens} tokens used"
        if self.max_cost_usd is not None and self.cost() >= self.max_cost_usd:
            return f"cost budget: ${self.cost():.4f} of ${self.max_cost_usd:.4f} spent"
        if self.max_wall_seconds is not None and self.elapsed() >= self.max_wall_seconds:
            return (
                f"wall-clock budget: {self.elapsed():.1f}s of {self.max_wall_seconds:.1f}s elapsed"
            )
        if calls and self.calls_until is not None and now() >= self.calls_until:
            limit = self.calls_until - self.started_at
            return f"time limit: {self.elapsed():.1f}s of {limit:.1f}s ({self.calls_until_why})"
        return None

    def check(self) -> None:
        """Refuse the call about to be made when a budget is spent.

        Raises:
            BudgetExhaustedError: the run's tokens, cost or wall-clock time are used up.
            TimeLimitReached: the run's time limit beside its plain answer has passed.
        """
        reason = self.exhausted(calls=False)
        if reason is not None:
            raise BudgetExhaustedError(reason)
        reason = self.exhausted()
        if reason is not None:
            raise TimeLimitReached(reason)

    def count(self, messages: list[BaseMessage], model_name: str = "") -> None:
        """Add the usage of `messages` (replies) to what the run spent."""
        usage = usage_of(messages, model_name)
        with self._lock:
            for key, value in usage.items():
                self.spent[key] = self.spent.get(key, 0) + value

    # --- what the run's model calls tell it (usage.ModelCallHandler) ------------------------

    def started(self, run_id: UUID, metadata: Mapping[str, Any]) -> None:
        """Refuse the call when a budget is spent; note the model's name (for its price)."""
        self.check()
        name = metadata.get("ls_model_name")
        with self._lock:
            self._names[run_id] = name if isinstance(name, str) else ""

    def ended(self, run_id: UUID, replies: list[AIMessage], error: BaseException | None) -> None:
        """Count the reply's tokens and cost (of a reply cut short by the budget too)."""
        with self._lock:
            name = self._names.pop(run_id, "")
        if error is None or isinstance(error, BudgetExhaustedError):
            self.count(list(replies), name)

    def figures(self) -> dict[str, Any]:
        """The budgets beside what the run used, for run.json and report.md."""
        figures: dict[str, Any] = {"seconds": round(self.elapsed(), 2), "tokens": self.tokens()}
        if self.max_wall_seconds is not None:
            figures["max_seconds"] = self.max_wall_seconds
        if self.calls_until is not None:
            figures["time_limit"] = round(self.calls_until - self.started_at, 2)
        if self.max_tokens is not None:
            figures["max_tokens"] = self.max_tokens
        if self.max_cost_usd is not None:
            figures["cost_usd"] = round(self.cost(), 6)
            figures["max_cost_usd"] = self.max_cost_usd
        return figures


@dataclass
class CallLimit:
    """What one model call may take of its run's budget: tokens to generate, time to decode.

    A model that can take less than it was asked for makes one per call (:meth:`of`), asks
    for :attr:`max_tokens`, stops decoding at :attr:`deadline` (:meth:`until_deadline`) and
    calls :meth:`end` with the reply: a reply the budget cut short is no reply (it is
    incomplete, and the run's budget is spent), so :meth:`end` raises with it.
    """

    budget: RunBudget = field(repr=False)
    """The run's budget the call counts against."""
    max_tokens: int | None
    """Tokens the call may generate (None: no token budget, as asked)."""
    capped: bool
    """The budget lowered the call's max_tokens."""
    deadline: float | None
    """When the run's wall-clock budget is spent (:func:`now`'s clock), None: no such budget."""
    timed_out: bool = False
    """Decoding was stopped at the deadline."""
    timeout_is_budget: bool = False
    """The call's timeout is the time the budget has left (a timeout means it is spent)."""

    @classmethod
    def of(cls, budget: RunBudget, asked: int | None, prompt_tokens: int = 0) -> CallLimit:
        """The limit of a call that asks for `asked` tokens with a prompt of `prompt_tokens`.

        Raises:
            BudgetExhaustedError: the prompt alone takes what is left of the token budget.
        """
        left = budget.tokens_left()
        max_tokens, capped = asked, False
        if left is not None:
            room = left - prompt_tokens
            if room < 1:
                raise BudgetExhaustedError(
                    f"token budget: {budget.tokens()} of {budget.max_tokens} tokens used; the "
                    f"next call's prompt ({prompt_tokens} tokens) does not fit in the {left} left"
                )
            if asked is None or room < asked:
                max_tokens, capped = room, True
        return cls(budget, max_tokens=max_tokens, capped=capped, deadline=budget.deadline())

    def seconds_left(self) -> float | None:
        """Seconds until the deadline (None: no wall-clock budget)."""
        return None if self.deadline is None else max(0.0, self.deadline - now())

    def until_deadline(self) -> Callable[..., bool]:
        """A stopping criterion (any arguments) that is true once the deadline has passed."""

        def criterion(*_: Any) -> bool:
            if self.deadline is not None and now() >= self.deadline:
                self.timed_out = True
            return self.timed_out

        return criterion

    def end(self, finish_reason: str | None, reply: AIMessage) -> None:
        """Raise when the budget cut `reply` short (the deadline, or the capped max_tokens).

        Raises:
            BudgetExhaustedError: with `reply`, whose usage the run's budget still counts.
        """
        budget = self.budget
        if self.timed_out:
            raise BudgetExhaustedError(
                f"wall-clock budget: {budget.elapsed():.1f}s of {budget.max_wall_seconds:.1f}s "
                "elapsed (the model was stopped mid-reply)",
                reply=reply,
            )
        if self.capped and finish_reason == "length":
            used = reply.usage_metadata["total_tokens"] if reply.usage_metadata else 0
            spent = budget.tokens() + used
            raise BudgetExhaustedError(
                f"token budget: {spent} of {budget.max_tokens} tokens used (the reply was cut "
                f"at the {self.max_tokens} tokens left)",
                reply=reply,
            )


class _RefusalIsNoFault(logging.Filter):
    """Drops LangChain's "Error in RunBudget… callback" warning: a refusal is the budget working.

    (The node wrapper logs the stop, with the budget's figures, where the run ends.)
    """

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        return not (
            isinstance(args, tuple)
            and len(args) == 3
            and args[0] == RunBudget.__name__
            and str(args[2]).startswith((BudgetExhaustedError.__name__, TimeLimitReached.__name__))
        )


logging.getLogger("langchain_core.callbacks.manager").addFilter(_RefusalIsNoFault())

_CURRENT: ContextVar[RunBudget | None] = ContextVar("atom_run_budget", default=None)
# Every callback manager LangChain configures while a budget is set gets it as an inheritable
# handler: a model call inside a runnable, an agent or a structured-output chain sees it too.
register_configure_hook(_CURRENT, inheritable=True)


@contextmanager
def watching(budget: RunBudget) -> Iterator[RunBudget]:
    """Every model call made inside the block is checked against, and counted by, `budget`."""
    token = _CURRENT.set(budget)
    try:
        yield budget
    finally:
        _CURRENT.reset(token)


def budget_of(run_manager: Any) -> RunBudget | None:
    """The budget a model call runs under (its callback manager's handler), or None."""
    for handler in getattr(run_manager, "handlers", None) or ():
        if isinstance(handler, RunBudget):
            return handler
    return None
