"""The Agent SDK compatibility suite, Python side: drives strata through the official
`claude-agent-sdk` (PyPI) with strata as the CLI (`cli_path`), against strata's mock model
server on 127.0.0.1 (`strata-mock-server`). Run by `scripts/sdk-compat/run`; needs
STRATA_BIN and STRATA_MOCK_BIN. Prints one line per case and exits 1 if any failed."""

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path

from claude_agent_sdk import (
    AssistantMessage,
    ClaudeAgentOptions,
    ClaudeSDKClient,
    HookMatcher,
    PermissionResultAllow,
    PermissionResultDeny,
    ResultError,
    ResultMessage,
    TextBlock,
    query,
)

STRATA = os.environ["STRATA_BIN"]
MOCK = os.environ["STRATA_MOCK_BIN"]


class Mock:
    """One mock server serving `replies` in order; `requests()` reads its log."""

    def __init__(self, replies):
        self.dir = Path(tempfile.mkdtemp(prefix="strata-sdk-"))
        (self.dir / "script.json").write_text(json.dumps(replies))
        self.log = self.dir / "requests.jsonl"
        self.proc = subprocess.Popen(
            [MOCK, "--script", str(self.dir / "script.json"), "--requests", str(self.log)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.url = self.proc.stdout.readline().strip()
        self.project = self.dir / "project"
        (self.project / ".git").mkdir(parents=True)
        self.config = self.dir / "config"

    def options(self, **extra):
        env = {
            "ANTHROPIC_BASE_URL": self.url,
            "ANTHROPIC_API_KEY": "sdk-compat-key",
            "STRATA_CONFIG_DIR": str(self.config),
            "CLAUDE_AGENT_SDK_SKIP_VERSION_CHECK": "1",
        }
        return ClaudeAgentOptions(cli_path=STRATA, cwd=str(self.project), env=env, **extra)

    def requests(self):
        # The log is rewritten every 50 ms; wait for it to settle.
        import time

        time.sleep(0.2)
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=5)


def text_of(messages):
    return "".join(
        b.text
        for m in messages
        if isinstance(m, AssistantMessage)
        for b in m.content
        if isinstance(b, TextBlock)
    )


def result_of(messages):
    results = [m for m in messages if isinstance(m, ResultMessage)]
    assert results, f"no result message in {messages}"
    return results[-1]


async def collect(prompt, options):
    return [m async for m in query(prompt=prompt, options=options)]


async def one_shot(mock):
    messages = await collect("say hello", mock.options())
    assert text_of(messages) == "hello from the mock", text_of(messages)
    result = result_of(messages)
    assert result.subtype == "success" and not result.is_error, result
    assert result.result == "hello from the mock"


async def multi_turn(mock):
    async with ClaudeSDKClient(options=mock.options()) as client:
        await client.query("first")
        first = [m async for m in client.receive_response()]
        await client.query("second")
        second = [m async for m in client.receive_response()]
    assert text_of(first) == "one" and text_of(second) == "two", (first, second)
    requests = mock.requests()
    assert len(requests) == 2
    # The second request carries the whole conversation.
    assert len(requests[1]["messages"]) == 3, requests[1]["messages"]


async def interrupt(mock):
    async with ClaudeSDKClient(options=mock.options()) as client:
        await client.query("take your time")
        await asyncio.sleep(1.0)
        await client.interrupt()
        messages = [m async for m in client.receive_response()]
        result = result_of(messages)
        assert result.is_error, result
        await client.query("again")
        again = [m async for m in client.receive_response()]
    assert text_of(again) == "back", again


async def mode_and_model(mock):
    async with ClaudeSDKClient(options=mock.options()) as client:
        await client.set_permission_mode("acceptEdits")
        await client.set_model("claude-sonnet-4-5")
        await client.query("hi")
        messages = [m async for m in client.receive_response()]
    assert result_of(messages).subtype == "success"
    assert mock.requests()[0]["model"] == "claude-sonnet-4-5", mock.requests()[0]["model"]


async def can_use_tool(mock):
    asked = []

    async def decide(tool_name, tool_input, context):
        asked.append((tool_name, tool_input))
        if tool_input.get("command") == "echo allowed | tee allowed.txt":
            return PermissionResultAllow()
        return PermissionResultDeny(message="not this one")

    async def prompts():
        yield {"type": "user", "message": {"role": "user", "content": "run two commands"}}

    messages = [
        m
        async for m in query(
            prompt=prompts(), options=mock.options(can_use_tool=decide, permission_mode="default")
        )
    ]
    # Each command writes a file: a read-only one (`echo x`) runs without asking anyone.
    commands = [a[1]["command"] for a in asked]
    assert commands == ["echo allowed | tee allowed.txt", "echo denied | tee denied.txt"], asked
    results = [
        msg["content"]
        for r in mock.requests()[1:]
        for msg in r["messages"][-1]["content"]
        if isinstance(msg, dict) and msg.get("type") == "tool_result"
    ]
    joined = json.dumps(results)
    assert "allowed" in joined and "not this one" in joined, joined
    assert result_of(messages).subtype == "success"


async def pre_tool_use_hook(mock):
    seen = []

    async def block_bash(input_data, tool_use_id, context):
        seen.append(input_data["tool_input"])
        return {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": "Bash is blocked by policy",
            }
        }

    options = mock.options(
        hooks={"PreToolUse": [HookMatcher(matcher="Bash", hooks=[block_bash])]},
        # Allowed by rule: only the hook stands between the model and the command.
        allowed_tools=["Bash"],
    )
    async with ClaudeSDKClient(options=options) as client:
        await client.query("delete everything")
        messages = [m async for m in client.receive_response()]
    assert seen and seen[0]["command"] == "touch hooked", seen
    assert not (mock.project / "hooked").exists(), "the blocked command ran"
    last = json.dumps(mock.requests()[1]["messages"][-1])
    assert "Bash is blocked by policy" in last, last
    assert result_of(messages).subtype == "success"


async def partial_messages(mock):
    messages = await collect("stream please", mock.options(include_partial_messages=True))
    events = [m.event["type"] for m in messages if type(m).__name__ == "StreamEvent"]
    assert "message_start" in events and "content_block_delta" in events, events
    assert events[-1] == "message_stop", events


async def raised(prompt, options):
    """The messages of a run that must end in an error result, and the ResultError the
    SDK raised after yielding it (the CLI exits 1 after an error result)."""
    messages = []
    try:
        async for m in query(prompt=prompt, options=options):
            messages.append(m)
    except ResultError as e:
        return messages, e
    raise AssertionError(f"no ResultError; messages: {messages}")


def check_error_result(messages, error, subtype, text):
    """Issue 25, item 5: the result carries the reference's `errors` text, and the SDK
    raises the reference's message from it (not "exit code 1")."""
    assert error.subtype == subtype, error.subtype
    expected = f"Claude Code returned an error result: {text}"
    assert str(error).startswith(expected), f"raised {str(error)!r}, expected {expected!r}"
    result = result_of(messages)
    assert result.subtype == subtype and result.is_error, result
    assert result.errors and result.errors[0] == text, result.errors
    return result


async def max_turns(mock):
    messages, error = await raised(
        "loop", mock.options(max_turns=1, allowed_tools=["Bash"])
    )
    result = check_error_result(
        messages, error, "error_max_turns", "Reached maximum number of turns (1)"
    )
    # The reference counts the turn the limit refused.
    assert result.num_turns == 2, result.num_turns


async def max_budget(mock):
    # The one answer costs more than the budget: the turn ends in error.
    messages, error = await raised("ping", mock.options(max_budget_usd=0.00001))
    check_error_result(
        messages, error, "error_max_budget_usd", "Reached maximum budget ($0.00001)"
    )


async def structured_output_retries(mock):
    messages, error = await raised(
        "which city?", mock.options(output_format={"type": "json_schema", "schema": SCHEMA})
    )
    check_error_result(
        messages,
        error,
        "error_max_structured_output_retries",
        "Failed to provide valid structured output after 5 attempts",
    )


async def resume(mock):
    first = await collect("remember 42", mock.options())
    session = result_of(first).session_id
    second = await collect("what was it?", mock.options(resume=session))
    assert text_of(second) == "42", second
    assert result_of(second).session_id == session
    assert "remember 42" in json.dumps(mock.requests()[1]["messages"])


async def system_prompts(mock):
    await collect("a", mock.options(system_prompt="You are a pirate."))
    await collect(
        "b",
        mock.options(
            system_prompt={"type": "preset", "preset": "claude_code", "append": "Always rhyme."}
        ),
    )
    requests = mock.requests()
    system = [json.dumps(r.get("system")) for r in requests]
    assert "You are a pirate." in system[0] and "strata" not in system[0], system[0]
    assert "Always rhyme." in system[1] and "strata" in system[1], system[1]


SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "population": {"type": "integer"}},
    "required": ["city", "population"],
}


async def structured_output(mock):
    # The SDK passes `--json-schema`; the model answers through the StructuredOutput tool,
    # first wrongly (it is told where), then rightly.
    messages = await collect(
        "which city?", mock.options(output_format={"type": "json_schema", "schema": SCHEMA})
    )
    result = result_of(messages)
    assert result.subtype == "success", result
    assert result.structured_output == {"city": "Lyon", "population": 522000}, result
    requests = mock.requests()
    assert any(t["name"] == "StructuredOutput" for t in requests[0]["tools"]), requests[0]["tools"]
    assert "/city" in json.dumps(requests[1]["messages"][-1]), requests[1]["messages"][-1]


async def fallback_model(mock):
    options = mock.options(model="claude-main", fallback_model="claude-spare")
    options.env["STRATA_MAX_RETRIES"] = "0"
    messages = await collect("hi", options)
    assert text_of(messages) == "from the spare", messages
    assert [r["model"] for r in mock.requests()] == ["claude-main", "claude-spare"]


async def setting_sources_and_no_persistence(mock):
    mock.config.mkdir(parents=True, exist_ok=True)
    (mock.config / "settings.json").write_text(json.dumps({"model": "from-user"}))
    await collect("a", mock.options(setting_sources=["user"]))
    # Only the project's settings: the user file is not read.
    await collect(
        "b",
        mock.options(setting_sources=["project"], extra_args={"no-session-persistence": None}),
    )
    models = [r["model"] for r in mock.requests()]
    assert models[0] == "from-user" and models[1] != "from-user", models
    transcripts = list((mock.config / "projects").rglob("*.jsonl"))
    assert len(transcripts) == 1, transcripts


CASES = [
    ("one-shot query", one_shot, [{"text": "hello from the mock"}]),
    ("multi-turn client", multi_turn, [{"text": "one"}, {"text": "two"}]),
    ("interrupt", interrupt, [{"text": "too late", "delay_ms": 20000}, {"text": "back"}]),
    ("permission mode and model change", mode_and_model, [{"text": "ok"}]),
    (
        "can_use_tool allow and deny",
        can_use_tool,
        [
            {"tool_use": {"id": "toolu_a", "name": "Bash", "input": {"command": "echo allowed | tee allowed.txt"}}},
            {"tool_use": {"id": "toolu_b", "name": "Bash", "input": {"command": "echo denied | tee denied.txt"}}},
            {"text": "done"},
        ],
    ),
    (
        "PreToolUse callback hook blocks Bash",
        pre_tool_use_hook,
        [
            {"tool_use": {"id": "toolu_h", "name": "Bash", "input": {"command": "touch hooked"}}},
            {"text": "blocked, fine"},
        ],
    ),
    ("partial messages", partial_messages, [{"text": "streamed"}]),
    (
        "max turns (error result text)",
        max_turns,
        [{"tool_use": {"id": "toolu_m", "name": "Bash", "input": {"command": "true"}}}],
    ),
    ("max budget (error result text)", max_budget, [{"text": "PONG"}]),
    (
        "structured output retries (error result text)",
        structured_output_retries,
        [{"text": "Lyon, I think."} for _ in range(5)],
    ),
    ("resume", resume, [{"text": "noted"}, {"text": "42"}]),
    ("custom and appended system prompts", system_prompts, [{"text": "arr"}, {"text": "rhyme"}]),
    (
        "structured output (output_format json_schema)",
        structured_output,
        [
            {"tool_use": {"id": "toolu_s1", "name": "StructuredOutput", "input": {"city": 7}}},
            {
                "tool_use": {
                    "id": "toolu_s2",
                    "name": "StructuredOutput",
                    "input": {"city": "Lyon", "population": 522000},
                }
            },
        ],
    ),
    (
        "fallback model on overload",
        fallback_model,
        [
            {"error": {"status": 529, "type": "overloaded_error", "message": "Overloaded"}},
            {"text": "from the spare"},
        ],
    ),
    (
        "setting sources and no session persistence",
        setting_sources_and_no_persistence,
        [{"text": "a"}, {"text": "b"}],
    ),
]


async def main():
    import claude_agent_sdk

    print(f"claude-agent-sdk {claude_agent_sdk.__version__}")
    failed = 0
    only = sys.argv[1:]
    for name, case, replies in CASES:
        if only and not any(o in name for o in only):
            continue
        mock = Mock(replies)
        try:
            await asyncio.wait_for(case(mock), timeout=60)
            print(f"PASS python: {name}")
        except Exception:
            failed += 1
            print(f"FAIL python: {name}")
            traceback.print_exc()
        finally:
            mock.close()
    sys.exit(1 if failed else 0)


asyncio.run(main())
