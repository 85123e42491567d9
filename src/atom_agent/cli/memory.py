"""`atom-agent memory`: list, recall, show, forget, export, import and sweep long-term memories."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from atom_agent.context import Context
from atom_agent.environment import check_workspace
from atom_agent.errors import ConfigError, InvalidInputError
from atom_agent.memory.records import MAX_CONTENT_CHARS, MEMORY_TYPES, MemoryRecord, MemoryType
from atom_agent.rule_text import StatedRule, states_change
from atom_agent.session import SessionContext

if TYPE_CHECKING:  # loaded by the handlers: `--help` and bad options need no Chroma
    from atom_agent.memory import MemoryManager

Handler = Callable[["MemoryManager", SessionContext, argparse.Namespace], int]


def register(subparsers: Any) -> None:
    """Add the `memory` subcommand and its actions."""
    parser = subparsers.add_parser(
        "memory", help="inspect and edit long-term memory", description=__doc__
    )
    _shared_options(parser)
    actions = parser.add_subparsers(dest="memory_action", metavar="ACTION", required=True)

    def action(name: str, handler: Handler, help: str) -> argparse.ArgumentParser:
        sub: argparse.ArgumentParser = actions.add_parser(name, help=help)
        # Also after the action (`memory list --workspace W`), as `runs list` takes them.
        _shared_options(sub, default=argparse.SUPPRESS)
        sub.set_defaults(func=lambda args: _run(args, handler))
        return sub

    listing = action("list", _list, "newest memories first")
    listing.add_argument("--type", default="all", choices=("all", *MEMORY_TYPES))
    listing.add_argument("--all", action="store_true", help="include forgotten memories")
    listing.add_argument("--limit", type=_positive_int, default=50)
    recall = action("recall", _recall, "memories relevant to a query")
    recall.add_argument("query")
    recall.add_argument("--type", default="all", choices=("all", *MEMORY_TYPES))
    recall.add_argument("--min-confidence", type=float, default=0.0)
    recall.add_argument("--limit", type=_positive_int, default=10)
    recall.add_argument("--all", action="store_true", help="include forgotten memories")
    show = action("show", _show, "one memory and its supersession history")
    show.add_argument("memory_id")
    add = actions.add_parser(
        "add",
        help="remember a rule or fact you state (default: a project convention)",
        description="Remember what you state, in your words, as a memory with source 'user'. A "
        "convention that changes an earlier one ('... instead of ...') supersedes it; every "
        "later run carries the conventions in force to each call that writes code.",
    )
    _shared_options(add, default=argparse.SUPPRESS)
    # The text is checked before the store is opened: bad input touches nothing.
    add.set_defaults(func=lambda args: _run(args, _add, prepare=_check_add))
    add.add_argument("text", help="what to remember, in your words")
    add.add_argument("--type", default="convention", choices=MEMORY_TYPES)
    forget = action("forget", _forget, "soft-delete a memory")
    forget.add_argument("memory_id")
    forget.add_argument("--reason")
    forget.add_argument("--replacement", dest="replacement_id")
    export = action("export", _export, "write every record as JSON (stdout or a file)")
    export.add_argument("--output", "-o", help="file to write (default: stdout)")
    imp = actions.add_parser("import", help="load records exported before (a JSON list)")
    _shared_options(imp, default=argparse.SUPPRESS)
    # The file is read and checked before the store is opened: bad input touches nothing.
    imp.set_defaults(func=lambda args: _run(args, _import, prepare=_read_import))
    imp.add_argument("file", help="JSON file ('-' for stdin)")
    action("sweep", _sweep, "delete expired memories")


def _shared_options(parser: argparse.ArgumentParser, default: Any = None) -> None:
    parser.add_argument(
        "--workspace", default=default, help="workspace directory (default: $ATOM_WORKSPACE)"
    )
    parser.add_argument(
        "--project", default=default, help="memory project (default: $ATOM_PROJECT_ID)"
    )
    parser.add_argument(
        "--chroma-url", default=default, help="Chroma server URL (default: $ATOM_CHROMA_URL)"
    )
    parser.add_argument(
        "--json",
        action="store_true",
        default=False if default is None else default,
        help="machine-readable output",
    )


def _positive_int(text: str) -> int:
    """An argparse type: a whole number ≥ 1 (a usage error otherwise)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be at least 1")
    return value


def _run(
    args: argparse.Namespace,
    handler: Handler,
    prepare: Callable[[argparse.Namespace], None] | None = None,
) -> int:
    if prepare is not None:
        prepare(args)
    overrides: dict[str, Any] = {}
    if args.workspace:
        overrides["workspace"] = args.workspace
    if args.project:
        overrides["project_id"] = args.project
    if args.chroma_url:
        overrides["chroma_url"] = args.chroma_url
    ctx = Context.from_env(**overrides)
    if not ctx.chroma_url:
        check_workspace(Path(ctx.workspace).expanduser())  # a file or read-only: say so
    session = SessionContext(session_id="cli", project_id=ctx.project_id)
    from atom_agent.memory import MemoryManager

    with MemoryManager.from_context(ctx) as manager:
        return handler(manager, session, args)


def _print_records(records: list[MemoryRecord], as_json: bool) -> None:
    if as_json:
        print(json.dumps([r.to_dict() for r in records], indent=2, ensure_ascii=False))
        return
    if not records:
        print("no memories")
    for r in records:
        flag = " [forgotten]" if r.superseded else ""
        print(f"{r.id}  {r.type.value:<14} {r.confidence:.2f}  {r.created_at:%Y-%m-%d %H:%M}{flag}")
        print(f"    {r.content}")
        if r.superseded:
            by = f"superseded by {r.superseded_by}" if r.superseded_by else "withdrawn"
            print(f"    ({by}{': ' + r.supersede_reason if r.supersede_reason else ''})")


def _list(manager: MemoryManager, session: SessionContext, args: argparse.Namespace) -> int:
    records = [MemoryRecord.from_dict(d) for d in manager.export(session)]
    records = [
        r for r in records if (args.all or not r.superseded) and args.type in ("all", r.type.value)
    ]
    records.sort(key=lambda r: r.created_at, reverse=True)
    _print_records(records[: max(0, args.limit)], args.json)
    return 0


def _recall(manager: MemoryManager, session: SessionContext, args: argparse.Namespace) -> int:
    found = manager.recall(
        session,
        args.query,
        type=args.type,
        min_confidence=args.min_confidence,
        limit=args.limit,
        include_superseded=args.all,
    )
    _print_records(found, args.json)
    return 0


def _show(manager: MemoryManager, session: SessionContext, args: argparse.Namespace) -> int:
    record = manager.get(session, args.memory_id)
    chain = manager.history(session, args.memory_id)
    if args.json:
        print(
            json.dumps(
                {"memory": record.to_dict(), "history": [r.to_dict() for r in chain]},
                indent=2,
                ensure_ascii=False,
            )
        )
        return 0
    for key, value in record.to_dict().items():
        if value is not None:
            print(f"{key:>17}: {value}")
    carried = record.reinforced + record.contradicted
    if carried:
        print(f"{'track record':>17}: carried into {carried} step(s) that ended: "
              f"{record.reinforced} passed, {record.contradicted} failed")  # fmt: skip
    if len(chain) > 1:
        print("history (oldest first):")
        for r in chain:
            marker = "*" if r.id == record.id else " "
            print(f"  {marker} {r.id}  {r.content[:80]}")
    return 0


def _check_add(args: argparse.Namespace) -> None:
    text = " ".join(str(args.text).split())
    if not text:
        raise InvalidInputError("memory add: the text is empty; say the rule in words")
    if len(text) > MAX_CONTENT_CHARS:
        raise InvalidInputError(
            f"memory add: the text has {len(text)} characters, more than {MAX_CONTENT_CHARS}; "
            "state one rule at a time"
        )
    args.text = text


def _add(manager: MemoryManager, session: SessionContext, args: argparse.Namespace) -> int:
    from atom_agent.memory.rules import record_rules

    statement = StatedRule(
        args.text, changes=args.type == "convention" and states_change(args.text)
    )
    done = record_rules(manager, session, [statement], origin="cli", type=MemoryType(args.type))
    if args.json:
        print(json.dumps({"written": [r.to_dict() for r in done.written],
                          "superseded": [{"id": o, "by": n} for o, n in done.superseded],
                          "unchanged": done.unchanged}, indent=2, ensure_ascii=False))  # fmt: skip
        return 0
    for record in done.written:
        print(f"remembered {record.id} ({record.type.value}): {record.content}")
    for old, new in done.superseded:
        print(f"superseded {old} (replaced by {new})")
    for same in done.unchanged:
        print(f"already remembered as {same}: nothing written")
    return 0


def _forget(manager: MemoryManager, session: SessionContext, args: argparse.Namespace) -> int:
    record = manager.forget(
        session, args.memory_id, reason=args.reason, replacement_id=args.replacement_id
    )
    if args.json:
        print(json.dumps(record.to_dict(), ensure_ascii=False))
    else:
        print(f"forgot {record.id}")
    return 0


def _export(manager: MemoryManager, session: SessionContext, args: argparse.Namespace) -> int:
    text = json.dumps(manager.export(session), indent=2, ensure_ascii=False)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as fh:
            fh.write(text + "\n")
    else:
        print(text)
    return 0


def _read_import(args: argparse.Namespace) -> None:
    """Read and check the import file into ``args.records``."""
    try:
        if args.file == "-":
            data = json.load(sys.stdin)
        else:
            with open(args.file, encoding="utf-8") as fh:
                data = json.load(fh)
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"cannot import {args.file}: it is not UTF-8 text (byte {exc.start}) — expected the "
            f"JSON list that `atom-agent memory export` writes"
        ) from None
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"cannot import {args.file}: not valid JSON ({exc}) — expected the JSON list that "
            f"`atom-agent memory export` writes"
        ) from None
    except OSError as exc:
        raise ConfigError(f"cannot read {args.file}: {exc.strerror or exc}") from exc
    if not isinstance(data, list) or not all(isinstance(d, dict) for d in data):
        raise ConfigError(f"{args.file}: expected a JSON list of records (as `export` writes)")
    args.records = data


def _import(manager: MemoryManager, session: SessionContext, args: argparse.Namespace) -> int:
    count = manager.import_(session, args.records)
    print(json.dumps({"imported": count}) if args.json else f"imported {count} memories")
    return 0


def _sweep(manager: MemoryManager, session: SessionContext, args: argparse.Namespace) -> int:
    count = manager.sweep_expired(session)
    print(json.dumps({"swept": count}) if args.json else f"swept {count} expired memories")
    return 0
