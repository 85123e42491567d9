"""Oracle of the held-out tasks: checks the agent never sees, one per task of tasks.jsonl.

    python oracle.py WORKSPACE RUN_ID_PREFIX

For each task it loads the run ``WORKSPACE/runs/<prefix>.<id>/``: every committed
``steps/*/committed/artifacts/impl.py`` (sorted; later ones win), then every non-test ``*.py``
under the run's ``result/`` folder, gathering their public names into one namespace (a module
that fails to import adds nothing). The task's check runs on that namespace. One line a task,
``<id>: PASS``, ``<id>: FAIL <ExceptionType>: <message>`` or ``<id>: no run``, then the total;
the exit status is always 0.
"""

from __future__ import annotations

import contextlib
import importlib.util
import inspect
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

Namespace = dict[str, Any]

# --- helpers of the checks ------------------------------------------------------------------------


def _need(ns: Namespace, name: str) -> Any:
    """The public name the task asks for; AssertionError naming it when it is missing."""
    assert name in ns, f"missing {name}"
    return ns[name]


def _params(fn: Callable[..., Any], *expected: str | tuple[str, Any]) -> None:
    """Fn's parameters are exactly the task's names, with its defaults (name or (name, default))."""
    params = inspect.signature(fn).parameters
    names = [e if isinstance(e, str) else e[0] for e in expected]
    where = getattr(fn, "__qualname__", repr(fn))
    assert list(params) == names, f"{where} takes {list(params)}, expected {names}"
    for entry in expected:
        if isinstance(entry, tuple):
            default = params[entry[0]].default
            assert default is entry[1] or (
                default == entry[1] and type(default) is type(entry[1])
            ), f"{where}: {entry[0]} defaults to {default!r}, expected {entry[1]!r}"


def _raises(exc: type[BaseException], fn: Callable[..., Any], *args: Any) -> None:
    """Fn(*args) raises exc (or a subclass of it)."""
    call = f"{getattr(fn, '__name__', 'call')}{args!r}"
    try:
        fn(*args)
    except exc:
        return
    except Exception as error:
        got = f"{type(error).__name__}({error})"
        raise AssertionError(f"{call} raised {got}, expected {exc.__name__}") from error
    raise AssertionError(f"{call} did not raise {exc.__name__}")


def _eq(got: Any, want: Any, what: str) -> None:
    """Got equals want, the message naming the call."""
    assert got == want, f"{what} -> {got!r}, expected {want!r}"


def _near(got: Any, want: float, what: str) -> None:
    """Got is a number within rounding of want (token counts are floats)."""
    ok = isinstance(got, int | float) and math.isclose(got, want, abs_tol=1e-9)
    assert ok, f"{what} -> {got!r}, expected {want!r}"


class _Clock:
    """A clock the checks move by hand: calling it returns the time it was set to."""

    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


# --- the checks, in task order --------------------------------------------------------------------


def check_duration(ns: Namespace) -> None:
    """h-duration: both functions, every valid and invalid form, the canonical output."""
    parse, fmt = _need(ns, "parse_duration"), _need(ns, "format_duration")
    _params(parse, "text")
    _params(fmt, "seconds")
    valid = {"1h30m": 5400, "45s": 45, "2d": 172800, "1d2h3m4s": 93784, "0s": 0, "90m": 5400}
    valid |= {"0h5m": 300, "007m": 420, "1d1s": 86401, "100h": 360000}
    for text, seconds in valid.items():
        _eq(parse(text), seconds, f"parse_duration({text!r})")
    invalid = ["", "h", "1", "1x", "1H", "1h 30m", " 1h", "1h ", "-1h", "+1h", "1.5h"]
    invalid += ["30m1h", "1s1m", "1h1h", "h1", "1hm", "1h30", "m30"]
    for text in invalid:
        _raises(ValueError, parse, text)
    canonical = {5400: "1h30m", 0: "0s", 59: "59s", 60: "1m", 86400: "1d", 3601: "1h1s"}
    canonical |= {90061: "1d1h1m1s", 200000: "2d7h33m20s", 864000: "10d"}
    for seconds, text in canonical.items():
        _eq(fmt(seconds), text, f"format_duration({seconds})")
        _eq(parse(fmt(seconds)), seconds, f"parse_duration(format_duration({seconds}))")
    _raises(ValueError, fmt, -1)


def check_wrap(ns: Namespace) -> None:
    """h-wrap: greedy filling, exact fit, long words alone, whitespace, no words, bad width."""
    wrap = _need(ns, "wrap_words")
    _params(wrap, "text", "width")
    cases = [
        ("the quick  brown fox", 10, ["the quick", "brown fox"]),
        ("aaa bbb", 7, ["aaa bbb"]),
        ("aaa bbb", 6, ["aaa", "bbb"]),
        ("a bbbbbbbb c", 4, ["a", "bbbbbbbb", "c"]),
        ("bbbbbbbb", 3, ["bbbbbbbb"]),
        ("one\ntwo\tthree", 20, ["one two three"]),
        ("  hi there  ", 5, ["hi", "there"]),
        ("a   b", 10, ["a b"]),
        ("well-known fact", 6, ["well-known", "fact"]),
        ("a b c", 1, ["a", "b", "c"]),
        ("a b c d e", 3, ["a b", "c d", "e"]),
        ("", 5, []),
        ("   \n\t ", 5, []),
    ]
    for text, width, lines in cases:
        _eq(wrap(text, width), lines, f"wrap_words({text!r}, {width})")
    _raises(ValueError, wrap, "abc", 0)
    _raises(ValueError, wrap, "abc", -3)


def check_csvline(ns: Namespace) -> None:
    """h-csvline: plain and quoted fields, doubled quotes, empty fields, separators, errors."""
    split = _need(ns, "split_csv_line")
    _params(split, "line", ("sep", ","))
    cases = [
        ('a,"b,c",""""', ",", ["a", "b,c", '"']),
        ("a,b,c", ",", ["a", "b", "c"]),
        ("", ",", [""]),
        ("a,", ",", ["a", ""]),
        (",", ",", ["", ""]),
        (" a , b", ",", [" a ", " b"]),
        ('""', ",", [""]),
        ('"a""b",c', ",", ['a"b', "c"]),
        ('x,"",y', ",", ["x", "", "y"]),
        ('a;"b;c";d', ";", ["a", "b;c", "d"]),
        ("a,b;c", ";", ["a,b", "c"]),
        ("a\tb", "\t", ["a", "b"]),
    ]
    for line, sep, fields in cases:
        _eq(split(line, sep), fields, f"split_csv_line({line!r}, {sep!r})")
    _eq(split('p,"q"'), ["p", "q"], "split_csv_line('p,\"q\"') with the default sep")
    for line in ['"abc', '"a,b', '"a""', 'ab"c', '"ab"c', '"ab" ,c', ' "a"', 'a,b"']:
        _raises(ValueError, split, line)
    for sep in ["", ",,", '"']:
        _raises(ValueError, split, "a,b", sep)


def check_bucket(ns: Namespace) -> None:
    """h-bucket: validation, starting full, refill and cap, all-or-nothing, clock going back."""
    bucket_type = _need(ns, "TokenBucket")
    _params(bucket_type, "capacity", "rate", ("clock", time.monotonic))
    clock = _Clock()
    bucket = bucket_type(2, 1.0, clock)
    _params(bucket.try_acquire, ("tokens", 1))
    _params(bucket.available)
    got = [bucket.try_acquire() for _ in range(3)]
    _eq(got, [True, True, False], "three try_acquire() at clock 0")
    clock.now = 0.5
    _eq(bucket.try_acquire(), False, "try_acquire() at clock 0.5")
    clock.now = 1.0
    _eq(bucket.try_acquire(), True, "try_acquire() at clock 1.0")
    for bad in [(0, 1.0), (-1, 1.0), (1, 0), (1, -2.0)]:
        _raises(ValueError, bucket_type, *bad, clock)
    _check_bucket_refill(bucket_type)
    _eq(bucket_type(1, 1.0).try_acquire(), True, "try_acquire() with the default clock")


def _check_bucket_refill(bucket_type: type) -> None:
    """Several tokens at once, the cap, and a clock that goes backwards."""
    clock = _Clock(10.0)
    bucket = bucket_type(5, 2.0, clock)
    _near(bucket.available(), 5.0, "available() of a new bucket")
    _raises(ValueError, bucket.try_acquire, 0)
    _raises(ValueError, bucket.try_acquire, 6)
    _eq(bucket.try_acquire(5), True, "try_acquire(5) of a full bucket")
    _near(bucket.available(), 0.0, "available() once emptied")
    clock.now = 10.25
    _near(bucket.available(), 0.5, "available() 0.25 s later at rate 2")
    clock.now = 11.0
    _eq(bucket.try_acquire(3), False, "try_acquire(3) holding 2")
    _near(bucket.available(), 2.0, "available() after a refused try_acquire(3)")
    clock.now = 11.5
    _eq(bucket.try_acquire(3), True, "try_acquire(3) holding 3")
    clock.now = 100.0
    _near(bucket.available(), 5.0, "available() long after (capped)")
    _eq(bucket.try_acquire(5), True, "try_acquire(5) when full again")
    clock.now = 50.0
    _near(bucket.available(), 0.0, "available() after the clock went back")
    clock.now = 51.0
    _near(bucket.available(), 2.0, "available() 1 s after the earlier reading")


def check_lru(ns: Namespace) -> None:
    """h-lru: validation, recency through get and put, peek and `in` leaving it alone."""
    cache_type = _need(ns, "LRUCache")
    _params(cache_type, "capacity")
    _raises(ValueError, cache_type, 0)
    _raises(ValueError, cache_type, -1)
    cache = cache_type(2)
    _params(cache.get, "key", ("default", None))
    _params(cache.put, "key", "value")
    _params(cache.peek, "key")
    cache.put("a", 1)
    cache.put("b", 2)
    _eq(cache.get("a"), 1, "get('a')")
    cache.put("c", 3)
    _eq(cache.keys(), ["a", "c"], "keys() after the worked example")
    assert type(cache.keys()) is list, "keys() does not return a list"
    assert "b" not in cache and len(cache) == 2, "'b' was not evicted"
    _check_lru_recency(cache_type)


def _check_lru_recency(cache_type: type) -> None:
    """Defaults, None values, replacing, peek and membership against the eviction order."""
    cache = cache_type(3)
    _eq(len(cache), 0, "len() of a new cache")
    for key, value in [("x", 1), ("y", None), ("z", 3)]:
        cache.put(key, value)
    _eq(cache.get("y", "dflt"), None, "get('y', 'dflt') of a stored None")
    _eq(cache.get("missing"), None, "get('missing')")
    _eq(cache.get("missing", "dflt"), "dflt", "get('missing', 'dflt')")
    _eq(cache.keys(), ["x", "z", "y"], "keys() after get('y') and two misses")
    cache.put("z", 30)
    _eq((cache.keys(), len(cache)), (["x", "y", "z"], 3), "(keys(), len) after replacing z")
    _eq(cache.peek("y"), None, "peek('y')")
    assert "x" in cache and "q" not in cache, "`in` is wrong"
    _raises(KeyError, cache.peek, "q")
    _eq(cache.keys(), ["x", "y", "z"], "keys() after peek and `in`")
    cache.put("w", 4)
    _eq(cache.keys(), ["y", "z", "w"], "keys() after a new key evicted x")
    _eq(cache.get("z"), 30, "get('z') after replacing it")
    single = cache_type(1)
    single.put(1, "one")
    single.put(2, "two")
    _eq((single.keys(), 1 in single), ([2], False), "capacity 1 after two puts")


def check_calendar(ns: Namespace) -> None:
    """h-calendar: ranges, overlaps and touching, ordering, conflicts and free slots."""
    calendar_type, overlap = _need(ns, "EventCalendar"), _need(ns, "OverlapError")
    assert isinstance(overlap, type) and issubclass(overlap, ValueError), (
        "OverlapError not a ValueError"
    )
    cal = calendar_type()
    _params(cal.add, "title", "start", "end")
    _params(cal.conflicts, "start", "end")
    _params(cal.events)
    _params(cal.free_slots, ("min_length", 1))
    _eq(cal.free_slots(), [(0, 1440)], "free_slots() of an empty calendar")
    cal.add("review", 600, 660)
    cal.add("standup", 540, 555)
    _eq(cal.free_slots(60), [(0, 540), (660, 1440)], "free_slots(60) of the worked example")
    _eq(cal.free_slots(), [(0, 540), (555, 600), (660, 1440)], "free_slots()")
    for start, end in [(-1, 10), (1400, 1441), (100, 100), (200, 150)]:
        _raises(ValueError, cal.add, "bad", start, end)
        _raises(ValueError, cal.conflicts, start, end)
    for start, end in [(550, 560), (530, 545), (500, 700), (545, 550), (659, 661)]:
        _raises(overlap, cal.add, "clash", start, end)
    _eq(cal.events(), [("standup", 540, 555), ("review", 600, 660)], "events() after refusals")
    cal.add("standup", 555, 600)
    cal.add("early", 0, 30)
    cal.add("late", 1380, 1440)
    want = [("early", 0, 30), ("standup", 540, 555), ("standup", 555, 600), ("review", 600, 660)]
    _eq(cal.events(), [*want, ("late", 1380, 1440)], "events() after touching adds")
    _eq(cal.conflicts(550, 601), ["standup", "standup", "review"], "conflicts(550, 601)")
    _eq(cal.conflicts(30, 540), [], "conflicts(30, 540) between events")
    _eq(cal.conflicts(0, 1440), ["early", "standup", "standup", "review", "late"], "whole day")
    _eq(cal.free_slots(), [(30, 540), (660, 1380)], "free_slots() with touching events")
    _eq(cal.free_slots(511), [(660, 1380)], "free_slots(511)")
    _raises(ValueError, cal.free_slots, 0)
    full = calendar_type()
    full.add("all day", 0, 1440)
    _eq(full.free_slots(), [], "free_slots() of a full day")


CHECKS: dict[str, Callable[[Namespace], None]] = {
    "h-duration": check_duration,
    "h-wrap": check_wrap,
    "h-csvline": check_csvline,
    "h-bucket": check_bucket,
    "h-lru": check_lru,
    "h-calendar": check_calendar,
}

# --- loading a run --------------------------------------------------------------------------------


def _sources(run: Path) -> list[tuple[Path, list[Path]]]:
    """The run's modules in loading order, each with the folders it needs on sys.path."""
    steps = run / "steps"
    found = [(f, [f.parent, steps]) for f in sorted(steps.glob("*/committed/artifacts/impl.py"))]
    result = run / "result"
    if result.is_dir():
        for path in sorted(result.rglob("*.py")):
            if not path.name.startswith("test"):
                found.append((path, [path.parent, result]))
    return found


def _public(path: Path, name: str) -> Namespace:
    """The public names of the module at path; nothing when it fails to import."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        return {}
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit):
        return {}
    return {k: v for k, v in vars(module).items() if not k.startswith("_")}


def load(run: Path, task_id: str) -> Namespace:
    """Every public name the run's modules define, later modules winning."""
    ns: Namespace = {}
    for n, (path, folders) in enumerate(_sources(run)):
        for folder in folders:
            sys.path.insert(0, str(folder))
        ns.update(_public(path, f"heldout_{task_id.replace('-', '_')}_{n}"))
    return ns


@contextlib.contextmanager
def _isolated(run: Path) -> Any:
    """Undo a run's additions to sys.path and its own modules in sys.modules afterwards."""
    path, before = list(sys.path), set(sys.modules)
    try:
        yield
    finally:
        sys.path[:] = path
        for name in set(sys.modules) - before:
            file = getattr(sys.modules[name], "__file__", None)
            if name.startswith("heldout_") or (file and Path(file).resolve().is_relative_to(run)):
                del sys.modules[name]


def verdict(workspace: Path, prefix: str, task_id: str) -> str:
    """The task's line: PASS, FAIL with the first broken expectation, or no run."""
    run = (workspace / "runs" / f"{prefix}.{task_id}").resolve()
    if not run.is_dir():
        return f"{task_id}: no run"
    with _isolated(run), contextlib.redirect_stdout(sys.stderr):
        try:
            CHECKS[task_id](load(run, task_id))
        except (Exception, SystemExit) as error:
            message = " ".join(str(error).split())[:160]
            return f"{task_id}: FAIL {type(error).__name__}: {message}"
    return f"{task_id}: PASS"


def main(argv: list[str]) -> int:
    """Print one line a task and the total; always 0."""
    workspace, prefix = Path(argv[0]), argv[1]
    lines = [verdict(workspace, prefix, task_id) for task_id in CHECKS]
    for line in lines:
        print(line)
    passed = sum(line.endswith(": PASS") for line in lines)
    print(f"held-out tasks passed: {passed}/{len(CHECKS)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
