"""Memory records: the types, the validation rules, and the Chroma metadata mapping."""

from __future__ import annotations

import base64
import json
import math
import secrets
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt

from atom_agent.errors import MemoryValidationError, MissingSessionError
from atom_agent.session import SessionContext

MAX_CONTENT_CHARS = 2000
"""Longest memory content accepted (characters)."""
MAX_RECALL_LIMIT = 50
"""Most memories one recall returns."""


class MemoryType(StrEnum):
    """What kind of knowledge a memory holds."""

    FACT = "fact"
    ASSUMPTION = "assumption"
    HYPOTHESIS = "hypothesis"
    DISCOVERY = "discovery"
    RISK = "risk"
    UNKNOWN = "unknown"
    DECISION = "decision"
    CONVENTION = "convention"
    LESSON_LEARNED = "lesson_learned"


class SourceType(StrEnum):
    """Who wrote a memory."""

    AGENT = "agent"
    REFLECTOR = "reflector"
    USER = "user"
    SYSTEM = "system"


MEMORY_TYPES: tuple[str, ...] = tuple(t.value for t in MemoryType)
"""The memory types, by name: the one list (tool schemas and prompts derive from it)."""

if TYPE_CHECKING:
    MemoryTypeName = str
    RecallTypeName = str
else:  # schemas the model sees: one enum of the names, from MemoryType
    MemoryTypeName = Literal[MEMORY_TYPES]
    RecallTypeName = Literal[("all", *MEMORY_TYPES)]

TYPE_CODES: dict[str, int] = {name: i for i, name in enumerate(MEMORY_TYPES)}


@dataclass(frozen=True, kw_only=True)
class MemoryRecord:
    """One long-term memory (docs/architecture.md, "Memory"). Times are timezone-aware UTC."""

    id: str
    content: str
    type: MemoryType
    confidence: float
    source_type: SourceType
    rationale: str | None
    importance: float
    project_id: str
    session_id: str
    run_id: str | None = None
    step_id: str | None = None
    attempt: int | None = None
    created_at: datetime
    access_count: int = 0
    last_accessed_at: datetime | None = None
    superseded_by: str | None = None
    supersede_reason: str | None = None
    superseded_at: datetime | None = None
    expires_at: datetime | None = None
    reinforced: int = 0
    """Runs whose step passed with this memory in its prompt (confidence raised each time)."""
    contradicted: int = 0
    """Runs whose step failed with this memory in its prompt (confidence lowered each time;
    below the recall floor it no longer reaches a prompt)."""
    last_evidence: str | None = None
    """What the last of those runs showed."""
    score: float | None = field(default=None, compare=False)
    """Ranking score of the recall that returned this record (None elsewhere)."""

    @property
    def superseded(self) -> bool:
        """Forgotten (soft-deleted), with or without a replacement."""
        return self.superseded_at is not None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MemoryRecord:
        """Inverse of :meth:`to_dict`."""
        out = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        out["type"] = MemoryType(out["type"])
        out["source_type"] = SourceType(out["source_type"])
        for name in ("created_at", "last_accessed_at", "superseded_at", "expires_at"):
            out[name] = parse_time(out.get(name), name)
        return cls(**out)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict (ISO-8601 times); the export format."""
        out = asdict(self)
        out.pop("score")
        for key, value in out.items():
            if isinstance(value, datetime):
                out[key] = value.isoformat()
            elif isinstance(value, StrEnum):
                out[key] = value.value
        return out


# --- validation (seed 004) -----------------------------------------------------------------------


def require_session(session: SessionContext | None, operation: str) -> SessionContext:
    """Return `session`, or raise a clear error when a memory operation has none."""
    if not isinstance(session, SessionContext):
        raise MissingSessionError(
            f"memory.{operation} needs a session context (SessionContext with session_id and "
            f"project_id); got {session!r}"
        )
    return session


def validate_content(content: object) -> str:
    """Content must be a non-empty string of at most 2000 characters."""
    if not isinstance(content, str) or not content.strip():
        raise MemoryValidationError("content must be a non-empty string")
    if len(content) > MAX_CONTENT_CHARS:
        raise MemoryValidationError(
            f"content is {len(content)} characters; the limit is {MAX_CONTENT_CHARS}: "
            f"store a shorter, factual statement"
        )
    return check_unicode(content.strip(), "content")


def check_unicode(text: str, name: str) -> str:
    """`text` if it encodes as UTF-8; text with a lone surrogate is rejected clearly."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise MemoryValidationError(
            f"{name} is not valid Unicode text: a lone surrogate {text[exc.start]!r} at"
            f" position {exc.start}"
        ) from None
    return text


def validate_type(value: object, *, allow_all: bool = False) -> str:
    """A memory type name (or ``all`` where a filter accepts it)."""
    allowed = (("all",) if allow_all else ()) + MEMORY_TYPES
    name = value.value if isinstance(value, StrEnum) else value
    if not isinstance(name, str) or name not in allowed:
        raise MemoryValidationError(f"type {value!r} is not one of: {', '.join(allowed)}")
    return name


def clamp_unit(value: object, name: str) -> float:
    """Clamp a number into [0, 1] (seed: confidence is clamped, not rejected)."""
    number = _number(value, name)
    return min(1.0, max(0.0, number))


def check_unit(value: object, name: str) -> float:
    """A number that must already lie in [0, 1] (a filter threshold)."""
    number = _number(value, name)
    if not 0.0 <= number <= 1.0:
        raise MemoryValidationError(f"{name} must be between 0.0 and 1.0, got {value!r}")
    return number


def check_limit(value: object) -> int:
    """A recall limit: an integer from 1 to 50."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise MemoryValidationError(f"limit must be an integer from 1 to 50, got {value!r}")
    if not 1 <= value <= MAX_RECALL_LIMIT:
        raise MemoryValidationError(f"limit must be between 1 and {MAX_RECALL_LIMIT}, got {value}")
    return value


def check_id(value: object, name: str = "memory_id") -> str:
    """A memory id: a non-empty string."""
    if not isinstance(value, str) or not value.strip():
        raise MemoryValidationError(f"{name} must be a non-empty string")
    return value.strip()


def optional_text(value: object, name: str) -> str | None:
    """An optional free-text argument; empty means absent."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise MemoryValidationError(f"{name} must be a string")
    text = value.strip()
    if len(text) > MAX_CONTENT_CHARS:
        raise MemoryValidationError(f"{name} is longer than {MAX_CONTENT_CHARS} characters")
    return check_unicode(text, name) or None


def _number(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        raise MemoryValidationError(f"{name} must be a number, got {value!r}")
    return float(value)


# --- Chroma metadata mapping ---------------------------------------------------------------------
# Chroma drops None values and cannot remove a key with `update`, so absent fields are simply not
# written. The vector also travels in the metadata (float16, base64): the SQLite metadata segment
# is consistent across processes sharing one embedded store, Chroma's HNSW segment is not.


def encode_vector(vector: npt.NDArray[np.float32]) -> str:
    """Pack a vector into a metadata string."""
    return base64.b64encode(np.asarray(vector, dtype=np.float16).tobytes()).decode("ascii")


def decode_vector(text: str) -> npt.NDArray[np.float32]:
    """Unpack :func:`encode_vector`."""
    return np.frombuffer(base64.b64decode(text), dtype=np.float16).astype(np.float32)


def stored_time(value: float) -> float:
    """Epoch seconds as Chroma keeps them: rounded to the microsecond.

    Chroma returns about one float metadata value in eight a few ulps off (measured on 2,000
    timestamps); a value rounded to six decimals comes back exactly, so a record read back
    from the store equals the one its writer holds.
    """
    return round(float(value), 6)


def to_ts(value: datetime | None) -> float | None:
    """A datetime as epoch seconds (see :func:`stored_time`)."""
    return None if value is None else stored_time(value.timestamp())


def from_ts(value: object) -> datetime | None:
    """Epoch seconds (as stored) as a UTC datetime."""
    if value is None:
        return None
    return datetime.fromtimestamp(float(value), tz=UTC)  # type: ignore[arg-type]


def record_to_metadata(record: MemoryRecord, vector: str, updated_at: float) -> dict[str, Any]:
    """The metadata dict of a record (no None values)."""
    meta: dict[str, Any] = {
        "type": record.type.value,
        "confidence": float(record.confidence),
        "source_type": record.source_type.value,
        "importance": float(record.importance),
        "project_id": record.project_id,
        "session_id": record.session_id,
        "created_at": stored_time(record.created_at.timestamp()),
        "access_count": int(record.access_count),
        "superseded": record.superseded_at is not None,
        "updated_at": stored_time(updated_at),
        "vec": vector,
    }
    optional = {
        "rationale": record.rationale,
        "run_id": record.run_id,
        "step_id": record.step_id,
        "attempt": record.attempt,
        "last_accessed_at": to_ts(record.last_accessed_at),
        "superseded_by": record.superseded_by,
        "supersede_reason": record.supersede_reason,
        "superseded_at": to_ts(record.superseded_at),
        "expires_at": to_ts(record.expires_at),
        "reinforced": record.reinforced or None,
        "contradicted": record.contradicted or None,
        "last_evidence": record.last_evidence,
    }
    meta.update({k: v for k, v in optional.items() if v is not None})
    return meta


PACKED = "m"
"""The metadata key that holds a stored record's fields as one JSON text (see
:func:`pack_metadata`)."""
_FILTERED = ("updated_at", "expires_at")
"""Fields Chroma filters on (``where``): stored as keys of their own."""


def pack_metadata(meta: Mapping[str, Any]) -> dict[str, Any]:
    """`meta` as stored in Chroma: the filtered fields as keys, the rest as one JSON text.

    Chroma keeps one row per metadata key and record, so a write's cost grows with the keys:
    an upsert of records with two keys instead of our thirteen took ≈ 0.8 instead of ≈ 1.1 ms
    per record here. JSON keeps floats exactly (Chroma returns some a few ulps off).
    """
    out = {k: meta[k] for k in _FILTERED if k in meta}
    rest = {k: v for k, v in meta.items() if k not in _FILTERED}
    out[PACKED] = json.dumps(rest, ensure_ascii=False, separators=(",", ":"))
    return out


def unpack_metadata(stored: Mapping[str, Any] | None) -> dict[str, Any]:
    """The fields of a stored record's metadata.

    Packed, or one key per field as records were stored before: both are read.
    """
    if not stored:
        return {}
    if PACKED not in stored:
        return dict(stored)
    out: dict[str, Any] = json.loads(str(stored[PACKED]))
    out.update((k, stored[k]) for k in _FILTERED if k in stored)
    return out


def record_from_metadata(
    memory_id: str, content: str, meta: dict[str, Any], score: float | None = None
) -> MemoryRecord:
    """Rebuild a record from its stored document and metadata."""
    created = from_ts(meta.get("created_at"))
    return MemoryRecord(
        id=memory_id,
        content=content,
        type=MemoryType(meta.get("type", "fact")),
        confidence=float(meta.get("confidence", 0.0)),
        source_type=SourceType(meta.get("source_type", "agent")),
        rationale=meta.get("rationale"),
        importance=float(meta.get("importance", 0.5)),
        project_id=str(meta.get("project_id", "")),
        session_id=str(meta.get("session_id", "")),
        run_id=meta.get("run_id"),
        step_id=meta.get("step_id"),
        attempt=int(meta["attempt"]) if "attempt" in meta else None,
        created_at=created if created is not None else datetime.fromtimestamp(0, tz=UTC),
        access_count=int(meta.get("access_count", 0)),
        last_accessed_at=from_ts(meta.get("last_accessed_at")),
        superseded_by=meta.get("superseded_by"),
        supersede_reason=meta.get("supersede_reason"),
        superseded_at=from_ts(meta.get("superseded_at")),
        expires_at=from_ts(meta.get("expires_at")),
        reinforced=int(meta.get("reinforced", 0)),
        contradicted=int(meta.get("contradicted", 0)),
        last_evidence=meta.get("last_evidence"),
        score=score,
    )


def parse_time(value: object, name: str) -> datetime | None:
    """An imported time: ISO-8601 string, epoch number, datetime or None."""
    if value is None or isinstance(value, datetime):
        return value if value is None or value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return datetime.fromtimestamp(float(value), tz=UTC)
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            raise MemoryValidationError(f"{name}: {value!r} is not an ISO-8601 time") from None
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    raise MemoryValidationError(f"{name}: {value!r} is not a time")


def new_record(session: SessionContext, item: Mapping[str, Any], now: float) -> MemoryRecord:
    """A validated record from `remember` keyword arguments (``content`` required)."""
    if "content" not in item:
        raise MemoryValidationError("content is required")
    source = item.get("source_type", SourceType.AGENT)
    if str(source) not in {s.value for s in SourceType}:
        raise MemoryValidationError(
            f"source_type {source!r} is not one of: {', '.join(s.value for s in SourceType)}"
        )
    ttl = item.get("ttl_s")
    if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, int | float) or ttl <= 0):
        raise MemoryValidationError(f"ttl_s must be a positive number of seconds, got {ttl!r}")
    created = datetime.fromtimestamp(now, tz=UTC)
    # A caller-chosen id makes a write idempotent: storing it twice upserts one record.
    given = item.get("id")
    return MemoryRecord(
        id=secrets.token_hex(12) if given is None else check_id(given, "id"),
        content=validate_content(item["content"]),
        type=MemoryType(validate_type(item.get("type", MemoryType.FACT))),
        confidence=clamp_unit(item.get("confidence", 0.8), "confidence"),
        source_type=SourceType(str(source)),
        rationale=optional_text(item.get("rationale"), "rationale"),
        importance=clamp_unit(item.get("importance", 0.5), "importance"),
        project_id=session.project_id,
        session_id=session.session_id,
        run_id=session.run_id,
        step_id=session.step_id,
        attempt=session.attempt,
        created_at=created,
        expires_at=None if ttl is None else datetime.fromtimestamp(now + float(ttl), tz=UTC),
    )


def restore_record(fresh: MemoryRecord, item: Mapping[str, Any]) -> MemoryRecord:
    """Carry an imported record's identity, provenance and history over a validated fresh one."""
    changes: dict[str, Any] = {}
    if item.get("id") is not None:
        changes["id"] = check_id(item["id"], "id")
    for name in ("session_id", "run_id", "step_id", "superseded_by", "supersede_reason"):
        if item.get(name) is not None:
            changes[name] = str(item[name])
    if isinstance(item.get("attempt"), int):
        changes["attempt"] = item["attempt"]
    if isinstance(item.get("access_count"), int):
        changes["access_count"] = max(0, item["access_count"])
    for name in ("created_at", "last_accessed_at", "superseded_at", "expires_at"):
        if name in item and item[name] is not None:
            changes[name] = parse_time(item[name], name)
    if changes.get("superseded_by") and "superseded_at" not in changes:
        changes["superseded_at"] = fresh.created_at
    return replace(fresh, **changes)
