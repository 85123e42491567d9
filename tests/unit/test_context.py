from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from atom_agent import Context, Resources, run_task
from atom_agent.errors import ConfigError
from atom_agent.testing import ScriptedChatModel


def test_defaults_are_valid_and_documented() -> None:
    ctx = Context()
    assert ctx.max_attempts == 3
    assert ctx.max_tokens is None
    for f in dataclasses.fields(Context):
        assert f.metadata.get("description"), f"field {f.name} has no description for Studio"


def test_from_env_converts_types() -> None:
    ctx = Context.from_env(
        {
            "ATOM_MAX_ATTEMPTS": "5",
            "ATOM_MAX_COST_USD": "1.25",
            "ATOM_MAX_TOKENS": "100000",
            "ATOM_APPROVE_PLAN": "yes",
            "ATOM_SANDBOX_NETWORK": "0",
            "ATOM_EXECUTOR_MODEL": "openai:gpt-4.1",
            "ATOM_WORKSPACE": "/tmp/ws",
            "UNRELATED": "x",
        }
    )
    assert ctx.max_attempts == 5 and isinstance(ctx.max_attempts, int)
    assert ctx.max_cost_usd == 1.25
    assert ctx.max_tokens == 100_000
    assert ctx.approve_plan is True
    assert ctx.sandbox_network is False
    assert ctx.model_for("executor") == "openai:gpt-4.1"
    assert ctx.model_for("planner") == ""
    assert ctx.workspace == "/tmp/ws"


def test_prompts_come_as_a_json_object_and_the_shorthands_join_them() -> None:
    ctx = Context.from_env(
        {"ATOM_PROMPTS": '{"PLAIN_TASK": "Solve: {task}"}', "ATOM_PLANNER_PROMPT": "Plan."}
    )
    assert ctx.prompts == {"PLAIN_TASK": "Solve: {task}"}
    assert ctx.prompt_replacements() == {"PLAIN_TASK": "Solve: {task}", "PLANNER_SYSTEM": "Plan."}
    # A server's context schema takes the environment's prompts as each Context's own copy.
    served = Context.with_env_defaults({"ATOM_PROMPTS": '{"DRAFT_TASK": "Draft."}'})
    first, second = served(), served()
    assert first.prompts == {"DRAFT_TASK": "Draft."} and first.prompts is not second.prompts


def test_optional_fields_accept_none_words() -> None:
    assert Context.from_env({"ATOM_MAX_TOKENS": ""}).max_tokens is None
    assert Context.from_env({"ATOM_MAX_WALL_SECONDS": "none"}).max_wall_seconds is None


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"ATOM_MAX_ATTEMPTS": "three"}, "ATOM_MAX_ATTEMPTS='three': expected int"),
        ({"ATOM_MAX_COST_USD": "cheap"}, "ATOM_MAX_COST_USD='cheap': expected float"),
        ({"ATOM_APPROVE_PLAN": "maybe"}, "ATOM_APPROVE_PLAN='maybe': expected one of"),
        ({"ATOM_MAX_ATTEMPTS": "0"}, "ATOM_MAX_ATTEMPTS='0': 0 is out of range"),
        ({"ATOM_MEMORY_MIN_CONFIDENCE": "1.5"}, "ATOM_MEMORY_MIN_CONFIDENCE='1.5'"),
        ({"ATOM_SANDBOX_MEMORY_MB": "-1"}, "ATOM_SANDBOX_MEMORY_MB='-1'"),
        ({"ATOM_PROMPTS": '["PLAIN_TASK"]'}, "ATOM_PROMPTS='[\"PLAIN_TASK\"]': expected a JSON"),
    ],
)
def test_from_env_errors_name_the_variable(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        Context.from_env(env)
    assert message in str(info.value)


def test_overrides_win_and_are_validated() -> None:
    ctx = Context.from_env({"ATOM_MAX_ATTEMPTS": "5"}, max_attempts=2)
    assert ctx.max_attempts == 2
    with pytest.raises(ConfigError, match="max_tool_calls: 0 is out of range"):
        Context.from_env({}, max_tool_calls=0)
    with pytest.raises(ConfigError, match="unknown Context field"):
        Context.from_env({}, max_atempts=2)


def test_wrong_types_are_rejected() -> None:
    with pytest.raises(ConfigError, match="max_attempts: expected a number"):
        Context(max_attempts="3")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="max_attempts: expected a number"):
        Context(max_attempts=True)
    with pytest.raises(ConfigError, match="workspace: must not be empty"):
        Context(workspace=" ")


def test_context_is_frozen_and_replace_validates() -> None:
    ctx = Context()
    with pytest.raises(dataclasses.FrozenInstanceError):
        ctx.max_attempts = 9  # type: ignore[misc]
    assert ctx.replace(max_attempts=4).max_attempts == 4
    with pytest.raises(ConfigError):
        ctx.replace(max_attempts=100)


def test_model_for_rejects_unknown_roles() -> None:
    for role in ("critic", "reflector"):  # the reflector proves by execution: it has no model
        with pytest.raises(ConfigError, match="unknown model role"):
            Context(model="local").model_for(role)
    assert Context(model="local", planner_model="other").model_for("executor") == "local"
    assert Context(model="local", planner_model="other").model_for("planner") == "other"


def test_a_model_for_an_unknown_role_is_a_configuration_error(tmp_path: Path) -> None:
    ctx = Context(workspace=str(tmp_path / "ws"))
    model = ScriptedChatModel(responses=[])
    with pytest.raises(ConfigError, match=r"unknown model roles \['reflector'\]"):
        Resources(ctx, models={"executor": model, "reflector": model})
    with pytest.raises(ConfigError, match=r"unknown model roles \['reflector'\]"):
        run_task("add two numbers", ctx, models={"reflector": model})
    assert not (tmp_path / "ws" / "runs").exists()
    assert Resources(ctx, models={"planner": model, "executor": model}).ctx is ctx
