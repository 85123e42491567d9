"""`atom-agent models`: providers usable here, the default a run would pick, a live check."""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from atom_agent.errors import AtomAgentError
from atom_agent.models import weights as local_weights
from atom_agent.sandbox import sandbox_status

# LangChain's chat models (the registry, the local model) load in the functions that use them:
# `atom-agent --help` and every other command start without them.

CHECK_PROMPT = (
    "Write a one-line Python function `add(a, b)` that returns the sum. Reply with code only."
)


@dataclass(frozen=True)
class ProviderStatus:
    """Whether a provider is usable here, and why (not)."""

    provider: str
    package: str
    usable: bool
    detail: str


def _local_status() -> ProviderStatus:
    from atom_agent.models.local import llama_available
    from atom_agent.models.registry import LOCAL

    if not llama_available():
        return ProviderStatus(LOCAL, "llama-cpp-python", False, local_weights.INSTALL_HINT)
    override = os.environ.get("ATOM_LOCAL_MODEL_PATH", "").strip()
    if override:
        try:
            local_weights.check_gguf(Path(override).expanduser())
        except AtomAgentError as exc:
            return ProviderStatus(LOCAL, "llama-cpp-python", False, str(exc))
        return ProviderStatus(LOCAL, "llama-cpp-python", True, f"ATOM_LOCAL_MODEL_PATH={override}")
    spec = local_weights.QWEN_CODER_1_5B
    if not local_weights.parts_installed(spec):
        return ProviderStatus(LOCAL, "llama-cpp-python", False, local_weights.INSTALL_HINT)
    cached = local_weights.cache_dir() / spec.filename
    where = (
        f"weights cached at {cached}"
        if cached.exists()
        else f"weights assembled from {len(spec.part_modules)} part packages on first use"
    )
    return ProviderStatus(
        LOCAL, "llama-cpp-python", True, f"Qwen2.5-Coder-1.5B-Instruct Q4_K_M; {where}"
    )


def _remote_status(provider: str) -> ProviderStatus:
    from atom_agent.models.registry import PROVIDER_KEYS, provider_package

    package = provider_package(provider)
    dist = package.split(".")[0].replace("_", "-")
    if importlib.util.find_spec(package.split(".")[0]) is None:
        return ProviderStatus(provider, dist, False, f"package not installed: pip install {dist}")
    keys = PROVIDER_KEYS.get(provider, ())
    if not keys:
        note = "needs a running Ollama server" if provider == "ollama" else "uses cloud credentials"
        return ProviderStatus(provider, dist, True, note)
    found = next((k for k in keys if os.environ.get(k, "").strip()), None)
    if found is None:
        return ProviderStatus(provider, dist, False, f"set {' or '.join(keys)}")
    return ProviderStatus(provider, dist, True, f"{found} is set")


def provider_statuses() -> list[ProviderStatus]:
    """The status of the local model and the listed remote providers."""
    from atom_agent.models.registry import LISTED_PROVIDERS

    return [_local_status(), *(_remote_status(p) for p in LISTED_PROVIDERS)]


def run_check(spec: str) -> dict[str, Any]:
    """Load `spec` and generate one reply: a real end-to-end check of the model."""
    from langchain_core.messages import AIMessage, HumanMessage

    from atom_agent.models.registry import load_chat_model

    started = time.perf_counter()
    model = load_chat_model(spec)
    reply = model.invoke([HumanMessage(CHECK_PROMPT)])
    elapsed = time.perf_counter() - started
    assert isinstance(reply, AIMessage)
    usage = reply.usage_metadata or {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
    generation_s = float(reply.response_metadata.get("duration_s", elapsed))
    out = int(usage["output_tokens"])
    return {
        "model": spec,
        "reply": reply.text,
        "input_tokens": int(usage["input_tokens"]),
        "output_tokens": out,
        "seconds_total": round(elapsed, 2),
        "seconds_generation": round(generation_s, 2),
        "tokens_per_second": round(out / generation_s, 1) if generation_s > 0 else None,
    }


def _cmd(args: argparse.Namespace) -> int:
    from atom_agent.models.registry import LOCAL, gemini_key, resolve_default_model

    statuses = provider_statuses()
    try:
        resolution = resolve_default_model(args.model)
        default: dict[str, str] = {"spec": resolution.spec, "reason": resolution.reason}
    except AtomAgentError as exc:
        default = {"spec": "", "reason": str(exc)}
    check = run_check(default["spec"]) if args.check and default["spec"] else None
    sandbox = sandbox_status()
    if args.json:
        payload = {
            "providers": [asdict(s) for s in statuses],
            "default": default,
            "check": check,
            "sandbox": asdict(sandbox),
        }
        print(json.dumps(payload, indent=2))
    else:
        console = Console()
        table = Table(title="Model providers")
        for column in ("provider", "package", "usable", "why"):
            table.add_column(column)
        for s in statuses:
            mark = "[green]yes[/green]" if s.usable else "[red]no[/red]"
            table.add_row(s.provider, s.package, mark, escape(s.detail))
        console.print(table)
        key = gemini_key()
        console.print("Default order: --model / ATOM_MODEL > Gemini when a key is set > local.")
        if default["spec"]:
            spec, reason = escape(default["spec"]), escape(default["reason"])
            console.print(f"Default model: [bold]{spec}[/bold] — {reason}")
        else:
            console.print(f"[red]No default model:[/red] {escape(default['reason'])}")
        if key is None and default["spec"] == LOCAL:
            console.print("Set GOOGLE_API_KEY (or GEMINI_API_KEY) to make Gemini the default.")
        console.print(
            f"Sandbox for generated code: [bold]{sandbox.runner}[/bold] "
            f"({escape(sandbox.reason)}); tree limit: {escape(sandbox.tree_limit)}"
        )
        for gap in sandbox.gaps:
            console.print(f"  not covered: {escape(gap)}")
        if check is not None:
            console.print(
                f"Check: {check['output_tokens']} tokens in {check['seconds_generation']}s "
                f"({check['tokens_per_second']} tok/s, prompt {check['input_tokens']} tokens; "
                f"{check['seconds_total']}s with loading)"
            )
            console.print(check["reply"], markup=False)
    if args.check and not default["spec"]:
        return 1
    return 0


def register(subparsers: Any) -> None:
    """Add the `models` subcommand."""
    parser = subparsers.add_parser(
        "models",
        help="list model providers, their usability here, and the default",
        description="List model providers, whether each is usable here and why, and which "
        "default a run would choose.",
    )
    parser.add_argument("--model", help="a provider:model spec or 'local' to resolve/check")
    parser.add_argument("--check", action="store_true", help="load the model and generate once")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.set_defaults(func=_cmd)
