"""Could a per-function choice among the modules already written pass the oracle? (offline)

ClassEval's finding is that weak models do better method by method; the agent's recombination
takes one function from another candidate when that executes strictly better on its checks.
This measures the ceiling of that idea with perfect checks: for each devtask, every module
the given folders hold for it (``*.<id>/**/impl.py``: samples, repairs, a run's candidates)
is cut into units (top-level functions, and methods as ``Class.method``), and a greedy search
swaps units between modules, keeping a swap when the hidden oracle gets further: a pass, or a
failure at a later line of the task's oracle check (its asserts run in order). No model call.

    python benchmarks/recombination_ceiling.py DIR [DIR ...] [--only ids]

Prints per task the modules found, the best single module's verdict, and the best
recombination's: "PASS" where choosing per function would have solved a task no module did.
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

ORACLE = Path(__file__).resolve().parents[2] / "shared" / "devtasks" / "oracle.py"
HARNESS = """\
import importlib.util, sys, traceback
spec = importlib.util.spec_from_file_location("atom_oracle", sys.argv[1])
oracle = importlib.util.module_from_spec(spec)
spec.loader.exec_module(oracle)
ns = {}
oracle._load(sys.argv[2], "atom_candidate", ns)
try:
    oracle.CHECKS[sys.argv[3]](ns)
except BaseException as exc:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == sys.argv[1]]
    print("FAIL", frames[0].lineno if frames else 0, type(exc).__name__, str(exc)[:80])
else:
    print("PASS")
"""
PASSED = 10**9


def modules(folders: Iterable[Path], tid: str) -> list[str]:
    """Distinct module texts written for task `tid` under `folders` (that parse)."""
    seen: dict[str, None] = {}
    for folder in folders:
        for run in sorted(folder.glob(f"runs/*.{tid}")):
            for impl in sorted(run.rglob("impl.py")):
                text = impl.read_text(encoding="utf-8", errors="replace")
                try:
                    ast.parse(text)
                except (SyntaxError, ValueError):
                    continue
                seen.setdefault(text, None)
    return list(seen)


def units(source: str) -> dict[str, ast.stmt]:
    """Top-level functions by name and methods as ``Class.method``."""
    found: dict[str, ast.stmt] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            found[node.name] = node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    found[f"{node.name}.{item.name}"] = item
    return found


def swapped(base: str, unit: str, donor: str) -> str | None:
    """`base` with `unit` taken from `donor` (plus the donor's imports and helpers it lacks)."""
    tree, giver = ast.parse(base), ast.parse(donor)
    new = units(donor).get(unit)
    if new is None:
        return None
    owner, _, name = unit.rpartition(".")
    body: list[ast.stmt] = tree.body
    if owner:
        cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == owner), None)
        if cls is None:
            return None
        body = cls.body
    at = next((i for i, n in enumerate(body) if getattr(n, "name", None) == name), None)
    if at is None:
        body.append(new)
    else:
        body[at] = new
    have = {b for n in tree.body for b in _bound(n)}
    imports = [n for n in giver.body if isinstance(n, ast.Import | ast.ImportFrom)]
    helpers = [n for n in giver.body if _bound(n) and not _bound(n) & have]
    tree.body[:0] = imports
    tree.body += helpers
    return ast.unparse(tree)


def _bound(node: ast.stmt) -> set[str]:
    """The module-level names a definition or a plain assignment binds (imports: none)."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return {node.name}
    if isinstance(node, ast.Assign | ast.AnnAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return set()


def scorer(oracle: Path, tid: str, folder: Path) -> Callable[[str], tuple[int, str]]:
    """The oracle's progress on a module: PASSED, or the oracle line its check failed at."""
    harness = folder / "harness.py"
    harness.write_text(HARNESS)
    memo: dict[str, tuple[int, str]] = {}

    def score(source: str) -> tuple[int, str]:
        if source not in memo:
            path = folder / f"m{len(memo)}" / "impl.py"
            path.parent.mkdir()
            path.write_text(source)
            try:
                out = subprocess.run(
                    [sys.executable, str(harness), str(oracle), str(path), tid],
                    capture_output=True, text=True, timeout=20, check=False, cwd=path.parent,
                ).stdout.strip().splitlines()  # fmt: skip
                line = out[-1] if out else "FAIL 0 no verdict"
            except subprocess.TimeoutExpired:
                line = "FAIL 0 timeout"
            memo[source] = (PASSED, "PASS") if line == "PASS" else (int(line.split()[1]), line)
        return memo[source]

    return score


def search(sources: list[str], score: Callable[[str], tuple[int, str]], bases: int = 3) -> tuple:
    """Greedy unit swaps from the best `bases` modules; the best (score, verdict, source)."""
    ranked = sorted(sources, key=lambda s: -score(s)[0])
    versions: dict[str, list[str]] = {}
    for source in sources:
        for unit, node in units(source).items():
            kept = versions.setdefault(unit, [])
            if all(ast.dump(node) != ast.dump(units(s)[unit]) for s in kept):
                kept.append(source)
    best = ranked[0]
    for base in ranked[:bases]:
        current = base
        for _ in range(2):
            for unit, donors in versions.items():
                for donor in donors:
                    if donor == current:
                        continue
                    trial = swapped(current, unit, donor)
                    if trial is not None and score(trial)[0] > score(current)[0]:
                        current = trial
                if score(current)[0] == PASSED:
                    break
        if score(current)[0] > score(best)[0]:
            best = current
        if score(best)[0] == PASSED:
            break
    return score(ranked[0]), score(best), best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", type=Path, nargs="+")
    parser.add_argument("--oracle", type=Path, default=ORACLE)
    parser.add_argument("--only", default="")
    args = parser.parse_args()
    spec_tids = re.findall(r'"([\w-]+)":\s*check_', args.oracle.read_text())
    tids = args.only.split(",") if args.only else spec_tids
    solved_single, solved_mixed = [], []
    for tid in tids:
        sources = modules(args.folders, tid)
        if not sources:
            print(f"{tid}: no module")
            continue
        with tempfile.TemporaryDirectory() as tmp:
            single, mixed, _ = search(sources, scorer(args.oracle, tid, Path(tmp)))
        solved_single += [tid] if single[0] == PASSED else []
        solved_mixed += [tid] if mixed[0] == PASSED else []
        print(f"{tid}: {len(sources)} modules; best module {single[1]}; "
              f"best recombination {mixed[1]}", flush=True)  # fmt: skip
    print(f"a module passes: {len(solved_single)} {solved_single}; "
          f"a recombination passes: {len(solved_mixed)} {solved_mixed}")  # fmt: skip


if __name__ == "__main__":
    main()
