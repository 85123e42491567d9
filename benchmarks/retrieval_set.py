"""Generate atom_agent's labelled retrieval set: memories an agent writes, and questions about them.

    .venv/bin/python benchmarks/retrieval_set.py        # writes benchmarks/data/retrieval_set.json

Deterministic (seeded, no network, no model): templates and vocabularies below. Five kinds of
query, each labelled with the ids of the records that answer it:

- ``identifier``: names a function, class or file path written in one record;
- ``error``: an error message pasted as the agent would see it in test output;
- ``entity``: names a person (owner, reviewer) or a place;
- ``paraphrase``: says what one record says in other words (few words in common);
- ``multi``: needs two records (what a service does *and* who owns it).

Every record has distractors: other records of the same template, module, service or person.
"""

from __future__ import annotations

import argparse
import json
import random
import re
from pathlib import Path

SEED = 15
OUT = Path(__file__).parent / "data" / "retrieval_set.json"

VERBS = [
    "parse",
    "load",
    "save",
    "fetch",
    "build",
    "render",
    "validate",
    "resolve",
    "merge",
    "sync",
    "encode",
    "decode",
    "normalize",
    "schedule",
    "compute",
    "refresh",
    "export",
    "import",
    "migrate",
    "flush",
    "index",
    "score",
    "route",
    "retry",
]
NOUNS = [
    "invoice",
    "tenant",
    "order",
    "session",
    "token",
    "ledger",
    "report",
    "manifest",
    "payload",
    "schema",
    "cursor",
    "webhook",
    "quota",
    "snapshot",
    "artifact",
    "checkpoint",
    "profile",
    "catalog",
    "shipment",
    "voucher",
    "metric",
    "bucket",
    "policy",
    "receipt",
    "timeline",
    "digest",
    "template",
    "credential",
    "batch",
    "queue",
]
SUFFIXES = ["", "_v2", "_async", "_batch", "_safe", "_legacy", "_fast", "_from_cache"]
BEHAVIOURS = [
    "must be called with UTC timestamps, never local time",
    "returns None instead of raising when the key is missing",
    "holds a global lock, so callers must not run it from two threads",
    "streams results lazily; materialise with list() before closing the connection",
    "retries three times with exponential backoff on HTTP 503",
    "mutates its argument in place and returns nothing",
    "expects the amounts in cents as integers, not floats",
    "silently drops rows whose id is empty",
    "is only safe after the migration to schema 7 has run",
    "caches its result for ten minutes per tenant",
    "opens a new database connection on every call; pass a pool instead",
    "sorts by creation time, oldest first, unless reverse=True",
    "raises ValueError on a byte order mark at the start of the file",
    "accepts ISO 8601 dates with a timezone offset only",
    "is deprecated; its async counterpart replaces it",
    "must be patched in tests because it calls the payment provider",
]
FOLDERS = ["core", "api", "jobs", "storage", "billing", "auth", "utils", "adapters", "workers"]
ERRORS = [
    ("KeyError", "'{k}'"),
    ("ValueError", "invalid literal for int() with base 10: '{k}'"),
    ("TypeError", "{f}() missing 1 required positional argument: '{k}'"),
    ("AttributeError", "'NoneType' object has no attribute '{k}'"),
    ("sqlite3.OperationalError", "no such column: {k}"),
    ("ModuleNotFoundError", "No module named '{k}'"),
    ("json.decoder.JSONDecodeError", "Expecting value: line 1 column 1 (char 0) in {k}"),
    ("AssertionError", "expected {k} to be sorted"),
    ("PermissionError", "[Errno 13] Permission denied: '/var/lib/app/{k}.lock'"),
    ("TimeoutError", "{f} did not finish within 30 s"),
]
CAUSES = [
    "the fixture does not create the {n} row first",
    "the config file still uses the old field name",
    "the test runs before the migration",
    "an empty string reaches the parser from the CSV export",
    "the mock returns None for the {n} lookup",
    "the worker starts before the cache is warm",
    "the CI image lacks the optional dependency",
    "the lock file is left behind by a crashed run",
]
FIXES = [
    "create the record in the fixture",
    "rename the field in settings.toml",
    "run the migration in the session fixture",
    "skip empty rows before parsing",
    "make the mock return an empty object",
    "warm the cache in the start-up hook",
    "add the dependency to the test extra",
    "remove stale lock files at start-up",
]
FIRST = [
    "Priya",
    "Tomasz",
    "Aiko",
    "Mateo",
    "Fatima",
    "Lars",
    "Chidi",
    "Elena",
    "Ravi",
    "Sofia",
    "Kwame",
    "Ingrid",
    "Hiroshi",
    "Amara",
    "Dmitri",
    "Lucia",
    "Oskar",
    "Nadia",
    "Bao",
    "Yusuf",
    "Greta",
    "Arjun",
    "Camila",
    "Emeka",
]
LAST = [
    "Raman",
    "Kowalski",
    "Tanaka",
    "Herrera",
    "Haddad",
    "Lindqvist",
    "Okafor",
    "Petrova",
    "Iyer",
    "Rossi",
    "Mensah",
    "Berg",
    "Sato",
    "Diallo",
    "Volkov",
    "Moreno",
    "Nilsson",
    "Farouk",
    "Nguyen",
    "Demir",
]
CITIES = [
    "Lisbon",
    "Nairobi",
    "Osaka",
    "Montreal",
    "Krakow",
    "Bogota",
    "Tallinn",
    "Lagos",
    "Pune",
    "Valencia",
    "Helsinki",
    "Santiago",
]
SERVICES = [
    "billing",
    "search",
    "notifications",
    "checkout",
    "identity",
    "reporting",
    "ingestion",
    "pricing",
    "inventory",
    "shipping",
    "analytics",
    "scheduler",
    "gateway",
    "ledger",
    "media",
    "onboarding",
    "fraud",
    "support",
    "catalog",
    "payments",
]
ROLES = [
    ("owns the {s} service and approves its releases", "who is responsible for the {s} service"),
    ("reviews every schema change of the {s} service", "who checks database changes to {s}"),
    ("is on call for the {s} service this quarter", "who gets paged when {s} breaks"),
]
DECISIONS = [
    "keep the {s} service on PostgreSQL instead of moving it to DynamoDB",
    "ship the {s} service's API as versioned REST rather than GraphQL",
    "freeze new features in the {s} service until the audit ends",
    "run the {s} service's nightly jobs in the Frankfurt region",
]
SERVICE_FACTS = [
    (
        "the {s} service deploys with blue-green releases behind the load balancer",
        "how does {s} roll out a new version",
    ),
    (
        "the {s} service stores its data in a sharded PostgreSQL cluster",
        "which database holds what {s} saves",
    ),
    (
        "the {s} service retries failed messages five times, then parks them in a dead-letter"
        " queue",
        "what happens to {s} messages that keep failing",
    ),
    (
        "the {s} service must answer in under 200 milliseconds at the 99th percentile",
        "what latency target does {s} have",
    ),
]
# A statement and a question that asks for it in other words (few shared words), per module.
PARAPHRASES = [
    (
        "The {m} evicts the least recently used entries once it holds 10,000 items",
        "how does the {m} decide what to throw away when it is full",
    ),
    (
        "The {m} tests are flaky on CI because they depend on wall-clock sleeps",
        "why do checks of the {m} sometimes fail on the build server",
    ),
    (
        "The {m} reads its settings from environment variables prefixed with APP_",
        "where does the {m} get its configuration",
    ),
    (
        "The {m} breaks on Windows because of backslash path separators",
        "what goes wrong with the {m} on Microsoft's operating system",
    ),
    (
        "The {m} leaks file handles when the iterator is not fully consumed",
        "why does the {m} run out of open descriptors",
    ),
    (
        "The {m} needs Redis running locally for its integration tests",
        "which external server must be up to exercise the {m} end to end",
    ),
    (
        "The {m} rounds currency amounts with banker's rounding",
        "how are money values made whole in the {m}",
    ),
    (
        "The {m} is slow above ten thousand rows unless the database index exists",
        "why does the {m} crawl on large tables",
    ),
    (
        "The {m} logs secrets unless the redaction filter is installed",
        "could the {m} write passwords into its output",
    ),
    (
        "The {m} was rewritten to stream results instead of loading everything in memory",
        "does the {m} still pull the whole dataset into RAM",
    ),
]
MODULES = [
    "cache",
    "parser",
    "scheduler",
    "rate limiter",
    "exporter",
    "importer",
    "template engine",
    "report builder",
    "tokenizer",
    "file watcher",
    "email sender",
    "backup job",
    "PDF renderer",
    "image resizer",
    "queue worker",
    "config loader",
    "retry helper",
    "session store",
    "search indexer",
    "metrics collector",
    "webhook dispatcher",
    "CSV reader",
    "diff viewer",
    "audit logger",
]
NOISE = [
    "The team agreed to review pull requests within one working day",
    "Step {i} wrote impl.py and test.py and all tests passed",
    "The plan was revised after attempt {i} because a dependency was missing",
    "Use descriptive commit messages that say why, not what",
    "Attempt {i} ran out of time while the test suite was still running",
    "The user asked for type hints on every public function",
]


def _upper_first(text: str) -> str:
    return text[:1].upper() + text[1:]


def build(seed: int = SEED) -> dict[str, object]:
    """The records and labelled queries (same seed, same set)."""
    rng = random.Random(seed)
    records: list[dict[str, str]] = []
    queries: list[dict[str, object]] = []

    def add(content: str, type_: str = "fact") -> str:
        rid = f"m{len(records):05d}"
        records.append({"id": rid, "content": content, "type": type_})
        return rid

    def ask(text: str, kind: str, ids: list[str]) -> None:
        queries.append({"query": text, "kind": kind, "relevant": ids})

    # Identifiers: 1,200 functions, classes and files; 90 queries name one.
    idents: set[str] = set()
    ident_ids: list[tuple[str, str, str]] = []
    while len(ident_ids) < 1200:
        verb, noun, suffix = rng.choice(VERBS), rng.choice(NOUNS), rng.choice(SUFFIXES)
        style = rng.random()
        if style < 0.6:
            name = f"{verb}_{noun}{suffix}"
        elif style < 0.85:
            name = f"{noun.capitalize()}{verb.capitalize()}{'r' if verb[-1] == 'e' else 'er'}"
        else:
            name = f"{rng.choice(FOLDERS)}/{noun}_{verb}.py"
        if name in idents:
            continue
        idents.add(name)
        folder = rng.choice(FOLDERS)
        behaviour = rng.choice(BEHAVIOURS)
        text = (
            f"{name} in src/app/{folder}/{noun}.py {behaviour}"
            if not name.endswith(".py")
            else f"The module {name} {behaviour}"
        )
        ident_ids.append((add(text, "convention"), name, behaviour))
    for k, (rid, name, _) in enumerate(rng.sample(ident_ids, 100)):
        if k % 2:  # in words, as a person says it: `TenantLoader` -> "the tenant loader"
            words = re.sub(r"(?<=[a-z])(?=[A-Z])|[_/.]", " ", name.removesuffix(".py")).lower()
            template = rng.choice(
                ["what should I know about the {w} code?", "notes on {w}", "is {w} safe to use?"]
            )
            ask(template.format(w=" ".join(words.split())), "identifier", [rid])
            continue
        template = rng.choice(
            ["what should I know before calling {n}?", "{n}", "notes on {n}", "is {n} safe to use"]
        )
        ask(template.format(n=name), "identifier", [rid])

    # Error messages: 600 failures with cause and fix; 70 queries paste the error line.
    keys = [
        f"{rng.choice(NOUNS)}_{rng.choice(['id', 'key', 'ref', 'code', 'region', 'at'])}"
        for _ in range(4000)
    ]
    keys = list(dict.fromkeys(keys))
    errors: list[tuple[str, str]] = []
    used: set[str] = set()
    while len(errors) < 600:
        etype, message = rng.choice(ERRORS)
        key = rng.choice(keys)
        func = f"{rng.choice(VERBS)}_{rng.choice(NOUNS)}"
        line = f"{etype}: {message.format(k=key, f=func)}"
        if line in used:
            continue
        used.add(line)
        cause = rng.choice(CAUSES).format(n=rng.choice(NOUNS))
        fix = rng.choice(FIXES)
        rid = add(
            f"test_{func} failed with {line} because {cause}; the fix was to {fix}",
            "lesson_learned",
        )
        errors.append((rid, line))
    for rid, line in rng.sample(errors, 70):
        prefix = rng.choice(["", "E   ", "FAILED tests/test_app.py - "])
        ask(f"{prefix}{line}", "error", [rid])

    # People, places and services: roles, decisions, service facts.
    people = [f"{f} {last}" for f in FIRST for last in LAST]
    rng.shuffle(people)
    service_fact: dict[tuple[str, int], str] = {}
    for s in SERVICES:
        for j, (fact, _) in enumerate(SERVICE_FACTS):
            service_fact[(s, j)] = add(_upper_first(fact.format(s=s)), "fact")
    owners: dict[tuple[str, int], tuple[str, str]] = {}
    person_rows: list[tuple[str, str, str]] = []
    cursor = 0
    for s in SERVICES:
        for j, (role, _) in enumerate(ROLES):
            for _ in range(4):  # several people per role; one per (service, role) is "current"
                who = people[cursor % len(people)]
                cursor += 1
                city = rng.choice(CITIES)
                rid = add(f"{who} from the {city} office {role.format(s=s)}", "fact")
                person_rows.append((rid, who, city))
            owners[(s, j)] = (rid, who)
    decisions: list[tuple[str, str, str]] = []
    for _ in range(320):
        who = rng.choice(people[:cursor])
        s = rng.choice(SERVICES)
        decision = rng.choice(DECISIONS).format(s=s)
        month = rng.choice(["March", "June", "September", "December"])
        rid = add(f"In {month} {rng.randint(2021, 2025)} {who} decided to {decision}", "decision")
        decisions.append((rid, who, s))
    for rid, who, s in rng.sample(decisions, 40):
        ask(f"what did {who} decide about {s}?", "entity", [rid])
    for _, who, s in rng.sample(decisions, 30):  # first name only: every match is an answer
        first = who.split()[0]
        answers = [r for r, w, t in decisions if t == s and w.split()[0] == first]
        ask(f"what did {first} decide for the {s} team?", "entity", answers)
    for rid, who, city in rng.sample(person_rows, 30):
        ask(f"what does {who} in {city} look after?", "entity", [rid])

    # Paraphrases: every module × statement; 90 queries ask in other words.
    para: list[tuple[str, str]] = []
    for m in MODULES:
        for statement, question in PARAPHRASES:
            para.append((add(statement.format(m=m), "lesson_learned"), question.format(m=m)))
    for rid, question in rng.sample(para, 90):
        ask(question + "?", "paraphrase", [rid])
    for (s, j), rid in rng.sample(sorted(service_fact.items()), 30):
        ask(SERVICE_FACTS[j][1].format(s=s) + "?", "paraphrase", [rid])

    # Multi-fact: a service fact and the person in a role for that service.
    for _ in range(60):
        s = rng.choice(SERVICES)
        j = rng.randrange(len(SERVICE_FACTS))
        r = rng.randrange(len(ROLES))
        ask(
            f"{SERVICE_FACTS[j][1].format(s=s)}, and {ROLES[r][1].format(s=s)}?",
            "multi",
            [service_fact[(s, j)], owners[(s, r)][0]],
        )

    while len(records) < 3600:
        add(rng.choice(NOISE).format(i=rng.randint(1, 500)), "fact")
    return {"seed": seed, "records": records, "queries": queries}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    data = build()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data, indent=0, ensure_ascii=False) + "\n", encoding="utf-8")
    kinds: dict[str, int] = {}
    for q in data["queries"]:  # type: ignore[union-attr]
        kinds[q["kind"]] = kinds.get(q["kind"], 0) + 1  # type: ignore[index]
    print(f"{len(data['records'])} records, {sum(kinds.values())} queries {kinds} -> {args.out}")  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
