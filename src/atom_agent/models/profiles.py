"""Model profiles: how the agent works with a model, declared once instead of type checks.

A *small* model (a few billion parameters: the embedded 1.5B, or one served by Ollama or any
OpenAI-compatible server) writes better code in a fenced block than inside a JSON tool call,
loses the thread in a long tool loop. It gets the draft-first path (whole-file drafts in its
natural format, warming retries, never a tool loop). A *standard* model gets the tool loop.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from atom_agent.errors import ConfigError
from atom_agent.usage import model_name_of


@dataclass(frozen=True)
class ModelProfile:
    """What the agent does around one model.

    Attributes:
        name: ``small`` or ``standard``.
        draft_first: an attempt is whole-file drafts in a fenced block (no tools, never the
            tool loop): the one that passes the step's contract, else the best of them. Without
            it the ReAct tool loop works from the step's best code so far.
        warming: temperatures of the candidates an attempt samples after its draft fails.
        cross_samples: independent implementations (witnesses) a failing draft is
            cross-examined by: candidate zero's whole-task samples first, fresh ones for the rest.
        task_samples: when the plain answer fails a check the task states, how many more
            answers to the whole task are sampled (at the ``warming`` temperatures, the plain
            prompt, never shown a check) before planning; the one that executes best wins.
    """

    name: str
    draft_first: bool
    warming: tuple[float, ...]
    cross_samples: int = 0
    task_samples: int = 0


SMALL = ModelProfile(
    name="small",
    draft_first=True,
    warming=(0.4, 0.8),
    cross_samples=2,
    task_samples=2,
)
STANDARD = ModelProfile(
    name="standard",
    draft_first=False,
    warming=(0.5,),
)
PROFILES = {p.name: p for p in (SMALL, STANDARD)}

SMALL_MAX_BILLIONS = 8.0
"""Models whose name gives a size up to this many billion parameters are small."""
_SIZE = re.compile(r"(?<![\d.])(\d+(?:\.\d+)?)\s*[bB](?![a-zA-Z])")


def profile_named(name: str) -> ModelProfile:
    """The profile called `name`.

    Raises:
        ConfigError: no such profile.
    """
    try:
        return PROFILES[name.strip()]
    except KeyError:
        raise ConfigError(
            f"model_profile: unknown profile {name!r}; choose one of {sorted(PROFILES)} "
            "or leave it empty for auto"
        ) from None


def profile_for(model: object, setting: str = "") -> ModelProfile:
    """The profile of `model`: `setting` when given, else from the size its name states.

    ``qwen2.5-coder:1.5b``, ``llama3.1-8b-instruct`` and the embedded model are small; a
    name without a size (``gemini-2.5-pro``, ``gpt-4.1``) is standard. A model object may
    also declare ``atom_profile`` (a profile name) itself.
    """
    if setting.strip():
        return profile_named(setting)
    declared = getattr(model, "atom_profile", None)
    if isinstance(declared, str) and declared:
        return profile_named(declared)
    name = model if isinstance(model, str) else model_name_of(model)
    sizes = [float(m) for m in _SIZE.findall(name or "")]
    if sizes and min(sizes) <= SMALL_MAX_BILLIONS:
        return SMALL
    return STANDARD
