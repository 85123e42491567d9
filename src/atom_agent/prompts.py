"""Prompt templates of the planner, executor and reflector ({named} placeholders)."""

PLANNER_SYSTEM = """\
You are the planner of a coding agent. Split the user's software task into a small plan of \
steps. Each step produces Python code in `impl.py` plus pytest tests in `test.py`, and is \
checked by running those tests.

Rules:
- Use at most {max_steps} step(s), fewer when you can; a small task (one function, one class) is
ONE step.
- Every step writes both the code and its tests: never plan a step that only writes tests.
- Every step has a unique short id (lowercase slug), a title, a precise description, and \
acceptance criteria that a test can check.
- `defines` lists the public functions and classes the step's impl.py defines. Every step \
defines something new; a step that changes a function of an earlier step depends on it.
- `checks` make the criteria executable, before any code exists: 2-6 per step, each a Python \
`call` of the step's code with the exact `expect`ed result (a Python literal) or the exception \
it `raises`, and the `criterion` it proves. Work each expected value out carefully from the \
task; for example {{"call": "slugify('Hello World')", "expect": "'hello-world'", "criterion": \
"spaces become hyphens"}} or {{"call": "parse('')", "raises": "ValueError", "criterion": \
"empty input is rejected"}}.
- `depends_on` lists the ids of earlier steps whose committed code this step imports or reads.
- The dependencies must form a DAG: no cycles, only ids of steps in the plan."""

PLANNER_TASK = """\
Task:
{task}
{replan}{feedback}
Answer with the plan."""

PLANNER_REPLAN = """
This is a replan. These steps are already committed and stay as they are (you may depend on \
them, do not repeat them):
{committed}
Steps the evidence shows wrong or incomplete are not listed: plan them again (same id), with \
what they lacked.

This step failed after all its attempts; plan the remaining work differently:
{failure}
"""

PLANNER_INVALID = """\
That plan is invalid and was not run:
{problems}
Fix these problems and answer with the whole corrected plan."""

EXECUTOR_SYSTEM = """\
You are the executor of a coding agent. You implement ONE step of a plan by writing files \
with your tools, then you run the tests to check your work.

Rules:
- Write the implementation to `impl.py` and pytest tests to `test.py` (relative paths). \
`test.py` imports from `impl` (e.g. `from impl import lru_cache`).
- Compute results; never hard-code expected outputs (no large string literals or lookup \
tables standing in for logic). The reviewer rejects hard-coded outputs.
- Tests must check every acceptance criterion. Run them with `run_tests`; fix and re-run \
until they pass.
- Code of earlier steps is readable at the dependency paths given; import it by putting \
nothing special: those directories are on the Python path when tests run.
- Use `remember` for a lesson or decision worth keeping for later steps; `recall` to look \
up what earlier steps learned.
- {ambiguity}
- When the tests pass, stop: answer with a one-line summary."""

EXECUTOR_ASK = (
    "Only if the task is ambiguous in a way you cannot resolve, call `ask_user` with one "
    "precise question."
)

EXECUTOR_DECIDE = (
    "Nobody can answer questions in this run: where the task is ambiguous, decide, and state "
    "what you assumed in a comment in impl.py."
)


def executor_system(custom: str, *, ask: bool) -> str:
    """The executor's system prompt: `custom` when given, else :data:`EXECUTOR_SYSTEM`.

    ``{ambiguity}`` becomes the line on questions (`ask`: the ask_user tool is offered).
    A custom prompt is taken literally otherwise (its own braces stay as written).
    """
    ambiguity = EXECUTOR_ASK if ask else EXECUTOR_DECIDE
    if custom.strip():
        return custom.replace("{ambiguity}", ambiguity)
    return EXECUTOR_SYSTEM.format(ambiguity=ambiguity)


def planner_system(custom: str, max_steps: int) -> str:
    """The planner's system prompt: `custom` (``{max_steps}`` filled in), else the built-in."""
    if custom.strip():
        return custom.replace("{max_steps}", str(max_steps))
    return PLANNER_SYSTEM.format(max_steps=max_steps)


EXECUTOR_START = """\
impl.py already holds this code, one plain answer to the task:
```python
{code}
```
Run against the step's checks (test.py, read-only): {summary}.
{failures}
Fix what fails in impl.py (edit_file or write_file), then run_tests."""

EXECUTOR_PINNED = """\
# Task
{task}

# Plan
{outline}

# Your step: {step_id} — {title}
{description}

Acceptance criteria:
{criteria}

# Files
{files}

Attempt {attempt} of {max_attempts}."""

EXECUTOR_TIER2 = """\
# What earlier work established
{memories}{dependencies}"""

EXECUTOR_TIER1 = """\
# Earlier attempts of this step (most recent first) — do not repeat their mistakes
{attempts}"""

EXECUTOR_ANSWERS = """\
# The user answered your questions
{answers}"""

REFLECTOR_SYSTEM = """\
You are the reviewer of a coding agent. Judge whether a step's code meets each acceptance \
criterion, from the evidence only: the test results, the test code and the implementation. A \
criterion is met only if a passing test or the code clearly shows it. Be strict and brief."""

REFLECTOR_TASK = """\
Step: {title}
{description}

Acceptance criteria:
{criteria}

Test run: {test_summary}
{test_output}

impl.py:
```python
{impl}
```

test.py:
```python
{tests}
```

Judge every criterion (verbatim), with evidence. If any is unmet, say what to change."""

PLAIN_TASK = """\
{task}

Write the complete Python module for this. Reply with the whole module in one ```python block, \
nothing else."""
"""Candidate zero: the task asked once, exactly as the single-shot baseline asks it."""

DRAFT_TASK = """\
{task}
{step}{dependencies}{earlier}
Write the complete Python module `impl.py` for this: only the implementation, no tests or \
usage examples (the tests are written separately). Reply with the whole file in one \
```python block, nothing else."""

DRAFT_STEP = """
This is one step of a larger plan: {title}
{description}
It must define: {defines}
"""

DRAFT_DEPENDENCIES = """
Code of earlier steps you can import:
{dependencies}
"""

DRAFT_MEMORIES = """
Notes from earlier runs (hints only: where they disagree with the task or its examples, the \
task wins):
{notes}
"""

DRAFT_EARLIER = """
An earlier attempt was rejected: {feedback}
"""

CONTRACT_TASK = """\
{task}
{step}{clauses}
Before any code exists, write the tests for {names}: 4 to 8 pytest `assert` lines with concrete \
inputs and the exact expected results, worked out carefully from the task. Cover the normal \
case, edge cases, and the errors it must raise (`with pytest.raises(...)`).{scenario} Reply with \
one ```python block, nothing else."""

CONTRACT_SKELETON = """\
{task}
{step}
Before any code exists, complete these tests of {names}. Each test checks the one statement of \
the task in its docstring: {how}, and assert the exact result each call returns \
(`with pytest.raises(...)` where the statement says it raises), worked out carefully from the \
task. Write only the tests, not {names} itself. Reply with the whole test file in one ```python \
block, nothing else.

```python
{skeleton}
```"""
"""A contract's test per open clause to complete, the clause as its docstring.

Asked for "the tests" of a long class description, a small model writes the class instead
(session 17: five of six replies; session 20: the Autocomplete class again, and the functions
again for three function tasks); a test file to complete, one function per statement
(HumanEval's shape: a docstring to write a body for), is what it completes."""

SKELETON_CLASS = "create the object, call its methods in order with concrete arguments"
SKELETON_FUNCTIONS = "call {names} with concrete arguments"
"""How a skeleton's tests call the code: scenarios on an object, or calls of functions."""

CONTRACT_CLAUSES = """
Statements of the task no test covers yet (cover each one):
{clauses}
"""

CONTRACT_SCENARIO = """ For a class, write each \
test as a short scenario on one object: create it, call its methods in order, and assert what \
each call returns or raises."""

CONTRACT_STEP = """
The tests are for one step of a larger plan: {title}
{description}
"""

# --- notes to the executor model during an attempt (the steering middlewares add them) ----------

BROKEN_CALL_NOTE = (
    "Your last reply was not a complete tool call ({why}), so nothing was done. Call the "
    "tool again with a shorter reply: keep each file under 60 lines (fewer, distinct test "
    "cases; no repeated lines)."
)
"""After a reply whose tool call was cut off or malformed (the call is asked once more)."""

MISSING_FILES_NOTE = (
    "Still missing in your staging area: {missing}. Write {it} now with write_file "
    "(impl.py: the implementation; test.py: pytest tests that import from impl)."
)
"""After a tool result, while impl.py or test.py is still missing."""

SALVAGED_NOTE = (
    "Your last write_file reply was cut off at the token limit. {path} was saved with its "
    "first {kept} complete lines{repeats}. Check it (read_file, run_tests) and fix what is "
    "missing with a shorter write: keep each file under 60 lines, with fewer, distinct cases."
)
"""On the call after a cut-off write_file whose complete lines were kept."""

EARLIER_TURNS_NOTE = (
    "This attempt's earlier tool calls and results were left out: the conversation outgrew "
    "the model's context window. Your files are as you last wrote them (read_file shows them)."
)
"""In place of the turns dropped when the conversation outgrew the context window."""

OUT_OF_ROOM = "The conversation no longer fits the model's context window: the attempt ends here."
"""The final reply of an attempt whose conversation no longer fits at all."""

EXAMPLES_NOTE = "What the task's own examples say: {lines}"
"""After a failing run_tests: which side the task's ``>>>`` examples prove wrong."""

UNCHANGED_WRITE_NOTE = (
    "the file already had exactly this content: nothing changed. "
    "If its tests fail, change whichever is wrong: the code, or the test's "
    "expected values (check them against the task)."
)
"""In write_file's result when the model rewrote a file with identical content."""

ASK_USER_DESCRIPTION = (
    "Ask the user ONE precise question when the task is ambiguous and you "
    "cannot decide yourself. The run pauses until the user answers; use it rarely."
)
"""The ask_user tool's manual (the model reads it)."""

ASK_USER_WAIT = "wait for the answer"
"""ask_user's result note."""

INVALID_ARGUMENTS = (
    "invalid arguments for {tool}: {problems}. Nothing was changed; fix the arguments and "
    "call it again."
)
"""A tool call whose arguments do not fit the tool's schema (one shape for every tool)."""

TOOL_FAILED = (
    "{tool} failed: {what}. The call may not have done anything; check with "
    "list_files or read_file, then try a plainer path or a smaller input"
)
"""A tool raised something it did not turn into a refusal itself."""

NO_SESSION = (
    "no session context: tool calls run inside a session (session_id, project_id); the run "
    "was started without one"
)
"""A tool call of an agent run without a session."""

REFLECTOR_SKIPPED = (
    "Your judgement covered {judged} of the {total} criteria. Judge every criterion, one entry "
    "each, in this order:\n{criteria}"
)
"""Asked once more when a judgement skipped criteria."""

# --- a run on a project (Context.repo) ---

PROJECT_SYSTEM = """\
You are a careful Python developer working in an existing project. You change one definition \
at a time, keep its signature, and follow the project's own style and helpers."""
"""The system message of every model call of a run on a project."""

PROJECT_LOCATE = """\
{task}

The project's files and definitions:
{repo_map}
{notes}
Which existing functions or methods must be written or changed for this task? Answer with one \
line per definition, `path/to/file.py::Name` or `path/to/file.py::Class.method`, nothing else."""
"""Localisation when the task names no definition of the project."""

PROJECT_NOTES = """
What earlier runs on this project found:
{notes}
"""
"""Recalled long-term memories of the project, in the localisation prompt."""

PROJECT_EDIT = """\
{task}

Other files of the project (signatures):
{repo_map}
{documents}
`{qualname}` in `{path}`, with the code around it (line numbers on the left):
{excerpt}
{feedback}
Write the new definition of `{qualname}`: its `def` line exactly as it is and a body that does \
what the task and the docstring say, using the project's own helpers where they fit. Leave the \
docstring out: it is kept as it is. Reply with only that definition{method} in one ```python \
block."""
"""The executor's request for a project step: the target's new definition."""

PROJECT_CONTRACT = """\
{task}

`{qualname}` in `{path}` is not written yet. The code around it (line numbers on the left):
{excerpt}
{origins}
Before it is written, write the tests for it: 4 to 8 pytest `assert` lines that use the \
project the way its users do, with concrete inputs and the exact results the task and the \
docstrings state, worked out carefully. Import what the tests use from the project. Reply with \
one ```python block, nothing else."""
"""The planner's request for reproduction tests of a project step that has no examples."""
PROJECT_CONTRACT_ORIGINS = """
The project's own tests get a `{cls}` like this:
{lines}
"""
"""How the project's tests get an object of a method's class (traced in its suite), for the
reproduction request: a test that builds it another way may never reach the method."""

PROJECT_CONTRACT_AGAIN = """

Tests written for it earlier never reached `{qualname}`: each stopped before it ran.
{failures}
Its header is `{signature}`.{usages} Write tests that each call `{qualname}` with all it \
needs, built the way the project builds it."""
"""Added to the reproduction request when no test of the first reply reached the target: what
stopped them, and how the project's own tests make the call. The rejected tests are not shown
(a small model shown its previous reply hands it back: sqlparse, session 20)."""
PROJECT_CONTRACT_USAGES = """ The project's own tests call `{name}` like this:
{lines}
"""

PROJECT_FEEDBACK = """
Your previous version:
```python
{previous}
```
It was not accepted:
{why}
Fix what failed.
"""
"""What a retry of a project step is told about the previous attempt (a repair)."""

PROJECT_ANEW = """
An earlier version was not accepted:
{why}
Write it anew, so that these hold.
"""
"""A retry's fresh samples: what failed, without the rejected code (a small model shown its
previous version tends to hand it back unchanged)."""
