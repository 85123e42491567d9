"""Every prompt a user can replace, by name: the registry, a run's replacements, what it sent.

Each prompt text stays beside the code that sends it, registered under its constant's name
(``PLANNER_SYSTEM = register("PLANNER_SYSTEM", "...")``); the sender reads it at send time
with :func:`prompt_text`, which gives the run's replacement when the user gave one
(``Context(prompts={name: text})``, ``--prompt NAME=FILE``) and records that the prompt was
sent. The registry is complete once :mod:`atom_agent.graph` is imported (it imports every
sender); ``docs/prompts.md`` lists which prompts each model profile sends.

A replacement is taken literally except for the built-in text's own ``{placeholders}``, which
are filled in as for the built-in one (``{max_steps}``, ``{task}``); any other brace in it
stays as written.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar

from atom_agent.errors import ConfigError

__all__ = ["Prompts", "default", "in_use", "names", "prompt_text", "register"]

_DEFAULTS: dict[str, str] = {}
_FIELD = re.compile(r"(?<!\{)\{([A-Za-z_][A-Za-z0-9_]*)\}(?!\})")


def register(name: str, text: str) -> str:
    """Register the built-in `text` of prompt `name` and return it (for the module constant)."""
    if _DEFAULTS.get(name, text) != text:
        raise ConfigError(f"prompt {name!r} registered twice with different texts")
    _DEFAULTS[name] = text
    return text


def names() -> list[str]:
    """The registered prompt names, sorted."""
    return sorted(_DEFAULTS)


def default(name: str) -> str:
    """The built-in text of prompt `name`."""
    try:
        return _DEFAULTS[name]
    except KeyError:
        raise ConfigError(f"unknown prompt {name!r}; prompts: {', '.join(names())}") from None


def _as_template(text: str, built_in: str) -> str:
    """`text` as the sender uses `built_in`: a format template when the built-in is one.

    A built-in with braces is filled with ``str.format`` by its sender; the user's text keeps
    its other braces by doubling them, and its placeholders the built-in has stay fields.
    """
    if "{" not in built_in:
        return text
    fields = set(_FIELD.findall(built_in))
    out: list[str] = []
    last = 0
    for match in _FIELD.finditer(text):
        out.append(text[last : match.start()].replace("{", "{{").replace("}", "}}"))
        kept = match.group(1) in fields
        out.append(match.group(0) if kept else "{{" + match.group(1) + "}}")
        last = match.end()
    out.append(text[last:].replace("{", "{{").replace("}", "}}"))
    return "".join(out)


class Prompts:
    """One run's replacements, and the names of the prompts it sent.

    Args:
        replaced: prompt name → the user's text; every name must be registered (checked by
            :meth:`check` once the registry is complete).
    """

    def __init__(self, replaced: Mapping[str, str] | None = None) -> None:
        self.replaced = {k: v for k, v in (replaced or {}).items() if v.strip()}
        self._sent: set[str] = set()
        self._lock = threading.Lock()

    def check(self) -> None:
        """Raise :class:`ConfigError` naming any replacement of a prompt that does not exist."""
        unknown = sorted(set(self.replaced) - set(_DEFAULTS))
        if unknown:
            raise ConfigError(
                f"unknown prompt(s) {', '.join(unknown)}; prompts: {', '.join(names())}"
            )

    def text(self, name: str) -> str:
        """The text to send for `name` (the user's, else the built-in); records the send."""
        built_in = default(name)
        with self._lock:
            self._sent.add(name)
        if name in self.replaced:
            return _as_template(self.replaced[name], built_in)
        return built_in

    def sent(self) -> list[str]:
        """The prompts this run has sent so far, sorted."""
        with self._lock:
            return sorted(self._sent)

    def replaced_and_sent(self) -> list[str]:
        """The user's replacements that were sent (the only ones the report says replaced)."""
        return [n for n in self.sent() if n in self.replaced]

    def replaced_unsent(self) -> list[str]:
        """The user's replacements this run never sent (its profile or path does not use them)."""
        sent = set(self.sent())
        return sorted(n for n in self.replaced if n not in sent)


_ACTIVE: ContextVar[Prompts | None] = ContextVar("atom_agent_prompts", default=None)


@contextmanager
def in_use(prompts: Prompts) -> Iterator[Prompts]:
    """Make `prompts` the ones :func:`prompt_text` reads in this context (a graph node's call)."""
    token = _ACTIVE.set(prompts)
    try:
        yield prompts
    finally:
        _ACTIVE.reset(token)


def prompt_text(name: str) -> str:
    """The text of prompt `name` for the current run (the built-in one outside a run)."""
    active = _ACTIVE.get()
    return active.text(name) if active is not None else default(name)
