"""The Chroma connection: embedded or server, a collection per project, writer locks, tokens."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import chromadb
from chromadb.config import Settings
from filelock import FileLock

from atom_agent.errors import ConfigError, MemoryStoreError
from atom_agent.memory.embeddings import MiniLMInt8EmbeddingFunction
from atom_agent.memory.store_open import open_embedded, with_store_retries

logger = logging.getLogger(__name__)

CHROMA_URL_ENV = "ATOM_CHROMA_URL"
"""Environment variable naming a shared Chroma server (``http://host:port``)."""
_META_COLLECTION = "atom-memory-meta"
# Chroma indexes every vector in an HNSW graph, but nothing here queries it: recall ranks an
# in-process mirror, and the store lookups are by id. Building that graph cheaply makes a batched
# write ≈ 1.6× faster. (Chroma applies these only when it creates a collection.)
_HNSW = {"hnsw:space": "cosine", "hnsw:construction_ef": 16, "hnsw:M": 8}


def collection_name(kind: str, project_id: str) -> str:
    """A valid Chroma collection name for `kind` ("memory", "lgstore") of one project.

    Project ids may hold characters Chroma forbids, so the name carries a digest; the project id
    itself is kept in the collection metadata and in every record.
    """
    digest = hashlib.sha256(project_id.encode("utf-8")).hexdigest()[:24]
    return f"atom-{kind}-{digest}"


class ChromaBackend:
    """A Chroma client plus what several writers need to agree: a lock and a change token.

    Embedded (``PersistentClient`` under ``<workspace>/memory``): writers in other processes take
    a file lock, and each collection has a change-token file rewritten under that lock on every
    write. Server (``chroma run``): the server serialises writes; the token lives in a small
    meta collection.
    """

    def __init__(
        self, client: Any, *, path: Path | None, url: str | None, cache: Path | None = None
    ) -> None:
        self.client = client
        self.path = path
        self.url = url
        self.cache = cache if cache is not None else path
        """Where mirror snapshots live (``<workspace>/memory``; a subfolder for a server)."""
        self.embedding_function = MiniLMInt8EmbeddingFunction()
        self.lock = threading.RLock()
        """Guards collection handles and in-memory mirrors; held briefly, never around writes."""
        self._write_mutex = threading.RLock()
        self._file_lock = FileLock(str(path / ".atom-write.lock")) if path else None
        self._collections: dict[str, Any] = {}
        self._meta: Any = None

    @classmethod
    def open(
        cls, workspace: str | os.PathLike[str], *, chroma_url: str | None = None
    ) -> ChromaBackend:
        """Connect to the server at `chroma_url`, else the embedded store in `workspace`.

        `chroma_url` None reads ``$ATOM_CHROMA_URL``; an empty string means embedded, whatever
        the environment says (a Context already resolved its environment).
        """
        if chroma_url is None:
            chroma_url = os.environ.get(CHROMA_URL_ENV, "")
        url = chroma_url.strip() or None
        settings = Settings(anonymized_telemetry=False)
        if url:
            parsed = urlparse(url if "://" in url else f"http://{url}")
            if parsed.scheme not in ("http", "https") or not parsed.hostname:
                raise ConfigError(f"chroma_url: {url!r} is not an http(s)://host:port URL")
            port = parsed.port or (443 if parsed.scheme == "https" else 8000)
            try:
                client = chromadb.HttpClient(
                    host=parsed.hostname, port=port, ssl=parsed.scheme == "https", settings=settings
                )
                client.heartbeat()
            except Exception as exc:  # chromadb raises assorted transport errors
                raise MemoryStoreError(f"cannot reach the Chroma server at {url}: {exc}") from exc
            digest = hashlib.sha256(url.encode("utf-8")).hexdigest()[:16]
            cache = Path(workspace) / "memory" / f".server-{digest}"
            return cls(client, path=None, url=url, cache=cache)
        # Absolute: Chroma keeps one system per path string for the process, so a relative
        # path opened again after a chdir would reach the old folder's system on a new file.
        path = Path(workspace).expanduser().resolve() / "memory"
        return cls(open_embedded(path, settings), path=path, url=None)

    def snapshot_path(self, name: str) -> Path | None:
        """The snapshot file of collection `name`'s mirror (None: no local cache)."""
        return None if self.cache is None else self.cache / f".{name}.mirror.npz"

    def collection(self, kind: str, project_id: str) -> Any:
        """The (created on demand) collection of `kind` for `project_id`."""
        name = collection_name(kind, project_id)
        with self.lock:
            found = self._collections.get(name)
            if found is None:

                def create() -> Any:
                    return self.client.get_or_create_collection(
                        name,
                        embedding_function=self.embedding_function,
                        metadata={"project_id": project_id, "kind": kind, **_HNSW},
                    )

                # Embedded: first creation races with other processes like opening does.
                found = (
                    create()
                    if self.path is None
                    else with_store_retries(self.path, "open a memory collection", create)
                )
                if (found.metadata or {}).get("project_id") != project_id:
                    raise MemoryStoreError(f"collection {name} belongs to another project")
                self._collections[name] = found
            return found

    @contextlib.contextmanager
    def write_lock(self) -> Iterator[None]:
        """Serialise writers: threads in this process and, when embedded, other processes.

        Take it before :attr:`lock` (never the other way round).
        """
        with self._write_mutex:
            if self._file_lock is None:
                yield
            else:
                with self._file_lock:
                    yield

    # --- change tokens: a reader refreshes its mirror when the token it saw has changed ---------

    def read_token(self, name: str) -> str:
        """The current change token of collection `name` ('' before any write)."""
        if self.path is not None:
            try:
                return (self.path / f".{name}.token").read_text(encoding="ascii")
            except FileNotFoundError:
                return ""
        got = self._meta_collection().get(ids=[name], include=["metadatas"])
        metas = got.get("metadatas") or []
        return str(metas[0].get("token", "")) if metas and metas[0] else ""

    def bump_token(self, name: str) -> str:
        """Set a fresh change token for `name` (call after writing, inside :meth:`write_lock`)."""
        token = uuid.uuid4().hex
        if self.path is not None:
            # Written in place (a rename costs milliseconds here): a reader that catches it
            # half-written sees a token it has not seen, and merely refreshes once more.
            (self.path / f".{name}.token").write_text(token, encoding="ascii")
        else:
            self._meta_collection().upsert(
                ids=[name], embeddings=[[1.0]], metadatas=[{"token": token}]
            )
        return token

    def _meta_collection(self) -> Any:
        if self._meta is None:
            self._meta = self.client.get_or_create_collection(
                _META_COLLECTION, embedding_function=None, metadata={"kind": "meta"}
            )
        return self._meta

    def close(self) -> None:
        """Drop cached handles (Chroma clients hold no exclusive resources)."""
        with self.lock:
            self._collections.clear()
            self._meta = None
