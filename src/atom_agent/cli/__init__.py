"""The `atom-agent` command line: one module per subcommand, each with `register(subparsers)`."""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sqlite3
import sys
from collections.abc import Sequence

from atom_agent import __version__
from atom_agent.environment import environment_failure
from atom_agent.errors import AtomAgentError

# Each module defines `register(subparsers)`, which adds its subcommand and sets `func`
# (a callable taking the parsed args and returning an exit code).
_COMMAND_MODULES = (
    "atom_agent.cli.run",
    "atom_agent.cli.runs",
    "atom_agent.cli.batch",
    "atom_agent.cli.eval",
    "atom_agent.cli.memory",
    "atom_agent.cli.models",
    "atom_agent.cli.doctor",
)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand registered."""
    parser = argparse.ArgumentParser(
        prog="atom-agent",
        description="Turn a software task into verified, committed code.",
    )
    parser.add_argument("--version", action="version", version=f"atom-agent {__version__}")
    parser.add_argument(
        "-v", "--verbose", action="count", default=0, help="more logging (-vv: debug)"
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in _COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=(logging.WARNING, logging.INFO, logging.DEBUG)[min(args.verbose, 2)],
        format="%(levelname)s %(name)s: %(message)s",
    )
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        code: int = args.func(args)
    except AtomAgentError as exc:
        # 2, like argparse's usage errors: the command could not do its job at all (a run
        # that ran and failed exits 1).
        print(f"atom-agent: error: {exc}", file=sys.stderr)
        return 2
    except (OSError, sqlite3.Error) as exc:
        # The machine refused (full disk, read-only, damaged file): say which file and the fix,
        # not a traceback.
        found = environment_failure(exc)
        print(f"atom-agent: error: {found or exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("atom-agent: interrupted", file=sys.stderr)
        return 130
    return code


def entry() -> None:
    """The ``atom-agent`` command: :func:`main`, then exit with its code, skipping finalization.

    Native threads of the libraries under the memory (Chroma's Rust client, ONNX Runtime) can
    still be joinable when the interpreter finalizes, and C++ then aborts the process
    ("terminate called without an active exception", exit 134) after the command did its work:
    measured once in 6–8 runs of ``memory list``. Every command closes what it opened (its
    resources are context managers), so once stdout and stderr are flushed the process ends
    with the command's code.
    """
    code = main()
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":  # pragma: no cover
    entry()
