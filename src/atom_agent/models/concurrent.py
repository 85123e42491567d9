"""Model calls that do not depend on each other, made at once where the model serves them so.

An API or a model server answers requests side by side; the embedded model decodes one
sequence at a time (:meth:`~atom_agent.resources.Resources.parallel_calls` says which). Each
call runs in a thread that starts with the caller's context: the run's budget, call ledger,
prompts and stream writer are context variables, so a call made here is budgeted, counted and
streamed as one made in the node's own thread. No thread outlives the block or function that
started it, and a call's error is raised to the caller.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import TypeVar

K = TypeVar("K")
T = TypeVar("T")


def at_once(calls: Mapping[K, Callable[[], T]], parallel: int) -> dict[K, T]:
    """Each call's result by its key: up to `parallel` at a time (one after another below 2).

    The first error is raised once every started call has ended.
    """
    if parallel < 2 or len(calls) < 2:
        return {key: call() for key, call in calls.items()}
    with ThreadPoolExecutor(max_workers=min(parallel, len(calls)),
                            thread_name_prefix="atom-call") as pool:  # fmt: skip
        futures = {key: pool.submit(contextvars.copy_context().run, call)
                   for key, call in calls.items()}  # fmt: skip
    return {key: future.result() for key, future in futures.items()}


@contextmanager
def alongside(call: Callable[[], T] | None) -> Iterator[Future[T] | None]:
    """Run `call` in another thread while the block runs (None: nothing to run, yields None).

    The block's end waits for it: no model call outlives the node that started it, and an
    error of the block is raised after it ends (the call's own, from ``result()``).
    """
    if call is None:
        yield None
        return
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="atom-alongside") as pool:
        yield pool.submit(contextvars.copy_context().run, call)
