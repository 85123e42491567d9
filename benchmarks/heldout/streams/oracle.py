"""Oracle of the held-out stream: each task's own request, and the standing rules said earlier.

The interface of ``../shared/streams/oracle.py``, so ``benchmarks/streams_eval.py`` runs it:

    python oracle.py score WORKSPACE STREAM.jsonl [--json OUT]   # runs WORKSPACE/runs/<stem>.<id>
    python oracle.py told STREAM.jsonl                           # the rules in force written first
    python oracle.py selftest                                    # the references pass

A run's code is its committed ``impl.py`` files (steps in order), then the non-test modules of its
``result/`` folder. Each run is scored in a child process with a time limit; always exits 0 after
scoring. Two streams, their task ids apart:

- ``h-text`` (t1–t5). Rules said in t1, one changed in t4: every public function fully annotated;
  an argument of the wrong type raises TypeError (t1), then TextTypeError, a TypeError subclass.
- ``h-geom`` (g1–g5). Rules said in g1, one changed in g4: each public function has a docstring;
  a returned float is rounded to two decimal places (g1), then to three (g4 on).
- ``h-conf`` (c1–c5). Rules said in c1, one withdrawn and replaced in c4: library code never
  prints; each public function's docstring has an ``Examples:`` section (c1), then a ``Raises:``
  section (c4 on).
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

Namespace = dict[str, Any]

_BOTH = (
    "Standing rules of this package: every public function is fully type-annotated (every "
    "parameter and the return value), and an argument of the wrong type raises "
)
TOLD = {
    "t2": _BOTH + "TypeError.",
    "t3": _BOTH + "TypeError.",
    "t4": "Standing rule of this package: every public function is fully type-annotated "
    "(every parameter and the return value).",
    "t5": _BOTH + "TextTypeError, a subclass of TypeError defined in the module.",
    "g2": "Conventions of this geometry module: each public function carries a docstring, and "
    "every float a function returns is rounded to two decimal places.",
    "g4": "Convention of this geometry module: each public function carries a docstring.",
    "g5": "Conventions of this geometry module: each public function carries a docstring, and "
    "every float a function returns is rounded to three decimal places.",
}
_CONF = "library code never prints (problems are reported by raising)"
TOLD |= {
    "c2": f"Rules of this config-reading package: {_CONF}, and every public function's "
    "docstring has an Examples: section.",
    "c4": f"Rule of this config-reading package: {_CONF}.",
    "c5": f"Rules of this config-reading package: {_CONF}, and every public function's "
    "docstring has a Raises: section naming what it raises.",
}
TOLD["g3"] = TOLD["g2"]
TOLD["c3"] = TOLD["c2"]
"""What a user would write before each later task if nothing remembered the rules (t4 states
the rule it changes itself, so it is told only the one it keeps)."""


def _function(ns: Namespace, name: str) -> Callable[..., Any]:
    found = ns.get(name)
    assert callable(found), f"{name} is not defined"
    return found


def _raises(kind: type[BaseException], call: Callable[[], Any]) -> BaseException:
    try:
        call()
    except kind as error:
        return error
    except Exception as error:  # noqa: BLE001 - the wrong kind is the finding
        raise AssertionError(f"raised {type(error).__name__}, not {kind.__name__}") from error
    raise AssertionError(f"did not raise {kind.__name__}")


def annotated(ns: Namespace, name: str) -> None:
    """Every parameter and the return value of `name` have annotations."""
    signature = inspect.signature(_function(ns, name))
    bare = [p.name for p in signature.parameters.values() if p.annotation is p.empty]
    assert not bare, f"{name}: parameters without annotations {bare}"
    assert signature.return_annotation is not signature.empty, f"{name}: no return annotation"


def wrong_type(ns: Namespace, name: str, args: tuple[Any, ...], subclass: str | None) -> None:
    """`name(*args)` (an argument of the wrong type) raises TypeError, or the named subclass."""
    error = _raises(TypeError, lambda: _function(ns, name)(*args))
    if subclass is not None:
        assert type(error).__name__ == subclass, f"raised {type(error).__name__}, not {subclass}"
        assert type(error) is not TypeError


def documented(ns: Namespace, name: str) -> None:
    """`name` has a docstring."""
    assert (inspect.getdoc(_function(ns, name)) or "").strip(), f"{name} has no docstring"


def never_prints(ns: Namespace, name: str) -> None:
    """`name`'s source calls no print."""
    import ast

    tree = ast.parse(inspect.getsource(_function(ns, name)).strip())
    used = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == "print"]
    assert not used, f"{name} prints"


def section(ns: Namespace, name: str, head: str) -> None:
    """`name`'s docstring has a section headed `head` (e.g. ``Examples:``)."""
    doc = inspect.getdoc(_function(ns, name)) or ""
    assert any(line.strip() == head for line in doc.splitlines()), f"{name}: no {head} section"


Cases = list[tuple[tuple[Any, ...], float]]


def rounded(ns: Namespace, name: str, places: int, cases: Cases) -> None:
    """`name(*args)` is the exact value rounded to `places` decimal places, for each case."""
    for args, exact in cases:
        got = _function(ns, name)(*args)
        want = round(exact, places)
        assert abs(got - want) < 1e-9, f"{name}{args} == {got!r}, not {want!r}"


def near(got: Any, want: float, tolerance: float = 0.01) -> bool:
    return isinstance(got, (int, float)) and abs(got - want) <= tolerance


# ---------------------------------------------------------------- the tasks' own checks


def task_t1(ns: Namespace) -> None:
    f = _function(ns, "word_count")
    assert f("") == 0 and f("one") == 1 and f("  two words\n") == 2 and f("a\tb  c") == 3
    annotated(ns, "word_count")
    wrong_type(ns, "word_count", (12,), None)


def task_t2(ns: Namespace) -> None:
    f = _function(ns, "initials")
    assert f("ada king lovelace") == "AKL" and f("") == "" and f("  grace   hopper ") == "GH"


def task_t3(ns: Namespace) -> None:
    f = _function(ns, "truncate")
    assert f("hello", 5) == "hello" and f("hello", 9) == "hello"
    assert f("hello world", 8) == "hello..." and f("abcdef", 3) == "..."
    _raises(ValueError, lambda: f("hello", 2))


def task_t4(ns: Namespace) -> None:
    f = _function(ns, "normalize_spaces")
    assert f("  a \t b\n\nc  ") == "a b c" and f("") == "" and f("one") == "one"
    wrong_type(ns, "normalize_spaces", (3,), "TextTypeError")


def task_t5(ns: Namespace) -> None:
    f = _function(ns, "count_vowels")
    assert f("Banana") == {"a": 3} and f("") == {} and f("xyz") == {}
    assert f("AEiou oU") == {"a": 1, "e": 1, "i": 1, "o": 2, "u": 2}


_SQRT13, _PI = 13**0.5, 3.141592653589793
DIAGONAL = [((2, 3), _SQRT13), ((1, 1), 2**0.5)]
CIRCLE = [((2,), _PI * 4), ((1.5,), _PI * 2.25)]
TRIANGLE = [((2, 3, 4), 2.9047375096555625), ((4, 5, 6), 9.921567416492215)]
PERIMETER = [(([1.2344, 1.0],), 2.2344), (([0.1, 0.2],), 0.3)]
SPHERE = [((1,), 4 / 3 * _PI), ((2,), 4 / 3 * _PI * 8)]


def task_g1(ns: Namespace) -> None:
    f = _function(ns, "rect_diagonal")
    assert near(f(3, 4), 5.0) and near(f(1, 1), 2**0.5) and near(f(0, 0), 0.0)
    documented(ns, "rect_diagonal")
    rounded(ns, "rect_diagonal", 2, DIAGONAL)


def task_g2(ns: Namespace) -> None:
    f = _function(ns, "circle_area")
    assert near(f(2), _PI * 4) and near(f(0), 0.0) and near(f(1), _PI)
    _raises(ValueError, lambda: f(-1))


def task_g3(ns: Namespace) -> None:
    f = _function(ns, "triangle_area")
    assert near(f(3, 4, 5), 6.0) and near(f(2, 3, 4), 2.9047375)
    _raises(ValueError, lambda: f(1, 2, 10))


def task_g4(ns: Namespace) -> None:
    f = _function(ns, "polygon_perimeter")
    assert near(f([1, 2, 3]), 6.0) and near(f([]), 0.0) and near(f([1.5, 2.25]), 3.75)
    rounded(ns, "polygon_perimeter", 3, PERIMETER)


def task_g5(ns: Namespace) -> None:
    f = _function(ns, "sphere_volume")
    assert near(f(1), 4 / 3 * _PI) and near(f(0), 0.0) and near(f(2), 4 / 3 * _PI * 8, 0.01)


def task_c1(ns: Namespace) -> None:
    f = _function(ns, "get_int")
    assert f({"a": "5"}, "a") == 5 and f({"a": "-3", "b": "1"}, "a") == -3
    _raises(KeyError, lambda: f({"a": "5"}, "b"))
    never_prints(ns, "get_int")
    section(ns, "get_int", "Examples:")


def task_c2(ns: Namespace) -> None:
    f = _function(ns, "get_bool")
    assert f({"a": "Yes"}, "a") is True and f({"a": "1"}, "a") is True
    assert f({"a": "FALSE"}, "a") is False and f({"a": "0"}, "a") is False
    _raises(ValueError, lambda: f({"a": "maybe"}, "a"))


def task_c3(ns: Namespace) -> None:
    f = _function(ns, "get_list")
    assert f({"a": "x, y,,z"}, "a") == ["x", "y", "z"] and f({"a": ""}, "a") == []
    assert f({"a": "p | q"}, "a", sep="|") == ["p", "q"]


def task_c4(ns: Namespace) -> None:
    f = _function(ns, "get_float")
    assert f({"a": "2.5"}, "a") == 2.5 and f({"a": "-1"}, "a") == -1.0
    _raises(ValueError, lambda: f({"a": "abc"}, "a"))
    section(ns, "get_float", "Raises:")


def task_c5(ns: Namespace) -> None:
    f = _function(ns, "get_choice")
    assert f({"a": "red"}, "a", ["red", "blue"]) == "red"
    _raises(ValueError, lambda: f({"a": "green"}, "a", ["red", "blue"]))


# ---------------------------------------------------------------- the rules in force, by task

Part = Callable[[str, Callable[[], Any]], None]

RULES: dict[str, Callable[[Namespace, Part], None]] = {
    "t2": lambda ns, r: (
        r("annotated", lambda: annotated(ns, "initials")),
        r("wrong type: TypeError", lambda: wrong_type(ns, "initials", (7,), None)),
    ),
    "t3": lambda ns, r: (
        r("annotated", lambda: annotated(ns, "truncate")),
        r("wrong type: TypeError", lambda: wrong_type(ns, "truncate", (("a", "b"), 5), None)),
    ),
    "t4": lambda ns, r: r("annotated", lambda: annotated(ns, "normalize_spaces")),
    "t5": lambda ns, r: (
        r("annotated", lambda: annotated(ns, "count_vowels")),
        r(
            "wrong type: TextTypeError",
            lambda: wrong_type(ns, "count_vowels", (9,), "TextTypeError"),
        ),
    ),
}
RULES |= {
    "g2": lambda ns, r: (
        r("docstring", lambda: documented(ns, "circle_area")),
        r("rounded: 2 places", lambda: rounded(ns, "circle_area", 2, CIRCLE)),
    ),
    "g3": lambda ns, r: (
        r("docstring", lambda: documented(ns, "triangle_area")),
        r("rounded: 2 places", lambda: rounded(ns, "triangle_area", 2, TRIANGLE)),
    ),
    "g4": lambda ns, r: r("docstring", lambda: documented(ns, "polygon_perimeter")),
    "g5": lambda ns, r: (
        r("docstring", lambda: documented(ns, "sphere_volume")),
        r("rounded: 3 places", lambda: rounded(ns, "sphere_volume", 3, SPHERE)),
    ),
}
RULES |= {
    "c2": lambda ns, r: (
        r("never prints", lambda: never_prints(ns, "get_bool")),
        r("Examples: section", lambda: section(ns, "get_bool", "Examples:")),
    ),
    "c3": lambda ns, r: (
        r("never prints", lambda: never_prints(ns, "get_list")),
        r("Examples: section", lambda: section(ns, "get_list", "Examples:")),
    ),
    "c4": lambda ns, r: r("never prints", lambda: never_prints(ns, "get_float")),
    "c5": lambda ns, r: (
        r("never prints", lambda: never_prints(ns, "get_choice")),
        r("Raises: section", lambda: section(ns, "get_choice", "Raises:")),
    ),
}
TASKS = {"t1": task_t1, "t2": task_t2, "t3": task_t3, "t4": task_t4, "t5": task_t5,
         "g1": task_g1, "g2": task_g2, "g3": task_g3, "g4": task_g4, "g5": task_g5,
         "c1": task_c1, "c2": task_c2, "c3": task_c3, "c4": task_c4, "c5": task_c5}  # fmt: skip


def rule_parts(task_id: str, ns: Namespace) -> list[list[Any]]:
    """[[part, passed], ...] of the rules in force for `task_id` (empty: none)."""
    parts: list[list[Any]] = []

    def part(name: str, check: Callable[[], Any]) -> None:
        try:
            check()
            parts.append([name, True])
        except BaseException:  # noqa: BLE001 - any failure fails the part
            parts.append([name, False])

    if task_id in RULES:
        RULES[task_id](ns, part)
    return parts


# ---------------------------------------------------------------- loading and scoring a run


def _load(path: Path, ns: Namespace) -> None:
    name = f"_heldout_{abs(hash(str(path)))}"
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    except BaseException:  # noqa: BLE001 - a module that does not import scores nothing
        return
    ns.update({k: v for k, v in vars(module).items() if not k.startswith("_")})


def namespace(run: Path) -> Namespace:
    ns: Namespace = {}
    for impl in sorted((run / "steps").glob("*/committed/artifacts/impl.py")):
        sys.path.insert(0, str(impl.parent))
        _load(impl, ns)
    result = run / "result"
    for module in sorted(result.rglob("*.py")) if result.is_dir() else []:
        if not module.name.startswith("test") and module.name != "conftest.py":
            sys.path[:0] = [str(module.parent), str(result)]
            _load(module, ns)
    return ns


def score_one(task_id: str, ns: Namespace) -> dict[str, Any]:
    row: dict[str, Any] = {"id": task_id, "task": True, "task_why": "", "rules": None,
                           "rules_why": "", "parts": []}  # fmt: skip
    try:
        TASKS[task_id](ns)
    except BaseException as error:  # noqa: BLE001
        row["task"], row["task_why"] = False, f"{type(error).__name__}: {error}"[:200]
    if task_id in RULES:
        row["parts"] = rule_parts(task_id, ns)
        row["rules"] = all(ok for _, ok in row["parts"])
    return row


def score(workspace: Path, stream: Path, timeout: float = 30.0) -> list[dict[str, Any]]:
    stem = stream.name.removesuffix(".jsonl")
    rows = []
    for line in stream.read_text().splitlines():
        if not line.strip():
            continue
        task_id = json.loads(line)["id"]
        run = workspace / "runs" / f"{stem}.{task_id}"
        failed = {"id": task_id, "task": False, "rules": False if task_id in RULES else None,
                  "parts": [[name, False] for name, _ in rule_parts(task_id, {})]}  # fmt: skip
        if not run.is_dir():
            rows.append({**failed, "task_why": "no run"})
            continue
        try:
            with tempfile.TemporaryDirectory() as cwd:
                argv = [sys.executable, __file__, "_child", str(run), task_id]
                done = subprocess.run(
                    argv, capture_output=True, text=True, timeout=timeout, cwd=cwd
                )
            rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
        except subprocess.TimeoutExpired:
            rows.append({**failed, "task_why": "timeout"})
        except (json.JSONDecodeError, IndexError):
            rows.append({**failed, "task_why": "the scoring process failed"})
    return rows


def told(stream: Path) -> str:
    out = []
    for line in stream.read_text().splitlines():
        if line.strip():
            task = json.loads(line)
            if task["id"] in TOLD:
                task["task"] = f"{TOLD[task['id']]} {task['task']}"
            out.append(json.dumps(task))
    return "\n".join(out)


def selftest() -> int:
    bad = 0
    for task_id in TASKS:
        ns: Namespace = {}
        path = Path(__file__).with_name("reference") / f"{task_id}.py"
        exec(compile(path.read_text(), str(path), "exec"), ns)  # noqa: S102 - our own reference
        row = score_one(task_id, {k: v for k, v in ns.items() if not k.startswith("_")})
        if not row["task"] or row["rules"] is False:
            bad += 1
            print(f"reference {task_id} fails: {row}")
    print(f"selftest: {len(TASKS) - bad}/{len(TASKS)} references pass")
    return 1 if bad else 0


def main() -> None:
    args = sys.argv[1:]
    if args[:1] == ["_child"] and len(args) == 3:
        print(json.dumps(score_one(args[2], namespace(Path(args[1])))))
    elif args[:1] == ["score"] and len(args) >= 3:
        rows = score(Path(args[1]), Path(args[2]))
        for row in rows:
            parts = row.get("parts") or []
            rules = "-" if row["rules"] is None else f"{sum(ok for _, ok in parts)}/{len(parts)}"
            print(f"{row['id']}: task {'PASS' if row['task'] else 'FAIL'}  rules {rules}  "
                  f"{row.get('task_why', '')}")  # fmt: skip
        if "--json" in args:
            Path(args[args.index("--json") + 1]).write_text(json.dumps(rows, indent=1))
    elif args[:1] == ["told"] and len(args) == 2:
        print(told(Path(args[1])))
    elif args[:1] == ["selftest"]:
        sys.exit(selftest())
    else:
        print(__doc__)
        sys.exit(2)


if __name__ == "__main__":
    main()
