"""Suite-wide settings: the suite is offline and never reads the developer's configuration."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

# Set before anything imports chromadb / langgraph / langsmith: tests never touch the network.
OFFLINE_ENV = {
    "ANONYMIZED_TELEMETRY": "False",
    "LANGGRAPH_CLI_NO_ANALYTICS": "1",
    "LANGGRAPH_NO_VERSION_CHECK": "true",
    "LANGSMITH_TRACING": "false",
    "LANGCHAIN_TRACING_V2": "false",
    "OMP_WAIT_POLICY": "PASSIVE",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
}
os.environ.update(OFFLINE_ENV)


def model_threads(workers: int) -> str | None:
    """The embedded model's and llama-server's threads in a run of `workers` xdist workers.

    Two workers may each decode at once (a test file is a group, see :func:`test_group`):
    two jobs on one thread each decode about 1.3x as much as two taking turns on two threads
    (llama.cpp's threads wait for the slowest at every token), and a job beside the other
    worker's tests loses nothing by it. None: one process, every core.
    """
    return "1" if workers > 1 else None


_THREADS = model_threads(int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1))
if _THREADS is not None:
    os.environ.setdefault("ATOM_LOCAL_THREADS", _THREADS)

import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _no_user_config(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keys and ATOM_* settings of the developer's shell must not change test outcomes."""
    for name in list(os.environ):
        if (
            name.startswith("ATOM_")
            and name != "ATOM_LOCAL_MODEL_PATH"
            and name != "ATOM_LOCAL_THREADS"
            and name != "ATOM_WHEEL_CACHE"
        ):
            monkeypatch.delenv(name, raising=False)
    for name in ("GOOGLE_API_KEY", "GEMINI_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)


_TESTS = Path(__file__).resolve().parent


def test_group(nodeid: str) -> str:
    """The group a test runs in under ``pytest -n 2 --dist loadgroup`` (``make test``): its file.

    A file's module fixtures (a server, a loaded model) start once. The files that decode
    with the model are groups like any other, so both workers may decode at once, each on
    one thread (:func:`model_threads`).
    """
    return nodeid.split("::", 1)[0]


class _FileGroups:
    """An xdist plugin: ``--dist loadgroup`` schedules by :func:`test_group`.

    xdist's own loadgroup reads ``xdist_group`` marks by rewriting node ids, which pytest 9.2
    no longer lets it do; this scheduler groups by file instead, so no mark is needed.
    """

    @pytest.hookimpl(tryfirst=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        if config.getvalue("dist") != "loadgroup":
            return None
        from xdist.scheduler import LoadScopeScheduling

        class ByGroup(LoadScopeScheduling):  # type: ignore[misc]
            def _split_scope(self, nodeid: str) -> str:
                return test_group(nodeid)

        return ByGroup(config, log)


def pytest_configure(config: pytest.Config) -> None:
    """Schedule by :func:`test_group` when pytest-xdist runs the suite."""
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(_FileGroups(), "atom-file-groups")


def _utf8(text: str) -> str:
    """`text` with what UTF-8 cannot carry (a lone surrogate) written as an escape."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Keep a report sendable: pytest-xdist sends it to the controller as UTF-8.

    Tests of hostile input log and assert on lone surrogates; one in a report's captured
    output or failure text stopped the whole xdist session (an execnet encoding error).
    """
    report.sections = [(title, _utf8(body)) for title, body in report.sections]
    if report.longrepr is not None and not isinstance(report.longrepr, tuple):
        text = str(report.longrepr)
        if _utf8(text) != text:
            report.longrepr = _utf8(text)
