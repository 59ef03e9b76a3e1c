// The Agent SDK compatibility suite, TypeScript side: drives strata through the official
// `@anthropic-ai/claude-agent-sdk` (npm) with strata as the CLI
// (`pathToClaudeCodeExecutable`), against strata's mock model server on 127.0.0.1
// (`strata-mock-server`). Run by `scripts/sdk-compat/run`; needs STRATA_BIN and
// STRATA_MOCK_BIN. Prints one line per case and exits 1 if any failed.

import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { query } from "@anthropic-ai/claude-agent-sdk";

const STRATA = process.env.STRATA_BIN;
const MOCK = process.env.STRATA_MOCK_BIN;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function assert(ok, what) {
  if (!ok) throw new Error(`assertion failed: ${what}`);
}

class Mock {
  static async start(replies) {
    const m = new Mock();
    m.dir = mkdtempSync(join(tmpdir(), "strata-sdk-"));
    writeFileSync(join(m.dir, "script.json"), JSON.stringify(replies));
    m.log = join(m.dir, "requests.jsonl");
    m.proc = spawn(MOCK, ["--script", join(m.dir, "script.json"), "--requests", m.log], {
      stdio: ["pipe", "pipe", "inherit"],
    });
    const lines = createInterface({ input: m.proc.stdout });
    m.url = await new Promise((resolve) => lines.once("line", resolve));
    m.project = join(m.dir, "project");
    mkdirSync(join(m.project, ".git"), { recursive: true });
    return m;
  }

  options(extra = {}) {
    return {
      pathToClaudeCodeExecutable: STRATA,
      cwd: this.project,
      env: {
        ...process.env,
        ANTHROPIC_BASE_URL: this.url,
        ANTHROPIC_API_KEY: "sdk-compat-key",
        STRATA_CONFIG_DIR: join(this.dir, "config"),
      },
      stderr: (data) => process.stderr.write(`  strata: ${data}`),
      ...extra,
    };
  }

  async requests() {
    await sleep(200); // the log is rewritten every 50 ms
    if (!existsSync(this.log)) return [];
    return readFileSync(this.log, "utf8").trim().split("\n").filter(Boolean).map((l) => JSON.parse(l));
  }

  close() {
    this.proc.stdin.end();
  }
}

const textOf = (messages) =>
  messages
    .filter((m) => m.type === "assistant")
    .flatMap((m) => m.message.content)
    .filter((b) => b.type === "text")
    .map((b) => b.text)
    .join("");
const resultOf = (messages) => {
  const r = messages.filter((m) => m.type === "result").at(-1);
  assert(r, "a result message");
  return r;
};
async function collect(prompt, options) {
  const out = [];
  for await (const m of query({ prompt, options })) out.push(m);
  return out;
}

/** The messages of a run that must end in an error result, and the error the SDK threw. */
async function raised(prompt, options) {
  const messages = [];
  try {
    for await (const m of query({ prompt, options })) messages.push(m);
  } catch (error) {
    return { messages, error };
  }
  throw new Error(`no error was raised; messages: ${JSON.stringify(messages)}`);
}

/** The result carries `text` first in `errors`, and the SDK raised the reference's message. */
function checkErrorResult(messages, error, subtype, text) {
  const expected = `Claude Code returned an error result: ${text}`;
  assert(String(error.message).startsWith(expected), `raised ${JSON.stringify(String(error.message))}, expected ${JSON.stringify(expected)}`);
  const r = resultOf(messages);
  assert(r.subtype === subtype && r.is_error, JSON.stringify(r));
  assert(Array.isArray(r.errors) && r.errors[0] === text, JSON.stringify(r.errors));
  return r;
}

/** A prompt stream the test feeds one user message at a time. */
function promptQueue() {
  const waiting = [];
  const queued = [];
  let done = false;
  return {
    push(text) {
      const msg = { type: "user", message: { role: "user", content: text }, parent_tool_use_id: null, session_id: "" };
      if (waiting.length) waiting.shift()({ value: msg, done: false });
      else queued.push(msg);
    },
    end() {
      done = true;
      while (waiting.length) waiting.shift()({ value: undefined, done: true });
    },
    [Symbol.asyncIterator]() {
      return {
        next: () =>
          queued.length
            ? Promise.resolve({ value: queued.shift(), done: false })
            : done
              ? Promise.resolve({ value: undefined, done: true })
              : new Promise((r) => waiting.push(r)),
      };
    },
  };
}

/** Reads messages of `q` up to and including the next result. */
async function untilResult(iter) {
  const out = [];
  while (true) {
    const { value, done } = await iter.next();
    if (done) return out;
    out.push(value);
    if (value.type === "result") return out;
  }
}

const cases = [
  ["one-shot query", [{ text: "hello from the mock" }], async (mock) => {
    const messages = await collect("say hello", mock.options());
    assert(textOf(messages) === "hello from the mock", textOf(messages));
    const r = resultOf(messages);
    assert(r.subtype === "success" && r.result === "hello from the mock", JSON.stringify(r));
    assert(Array.isArray(r.errors ?? []), "errors is an array");
  }],
  ["multi-turn client", [{ text: "one" }, { text: "two" }], async (mock) => {
    const prompts = promptQueue();
    const q = query({ prompt: prompts, options: mock.options() });
    const it = q[Symbol.asyncIterator]();
    prompts.push("first");
    const first = await untilResult(it);
    prompts.push("second");
    const second = await untilResult(it);
    prompts.end();
    for await (const _ of { [Symbol.asyncIterator]: () => it });
    assert(textOf(first) === "one" && textOf(second) === "two", `${textOf(first)} ${textOf(second)}`);
    const reqs = await mock.requests();
    assert(reqs.length === 2 && reqs[1].messages.length === 3, JSON.stringify(reqs.map((r) => r.messages.length)));
  }],
  ["interrupt", [{ text: "too late", delay_ms: 20000 }, { text: "back" }], async (mock) => {
    const prompts = promptQueue();
    const q = query({ prompt: prompts, options: mock.options() });
    const it = q[Symbol.asyncIterator]();
    prompts.push("take your time");
    await sleep(1000);
    await q.interrupt();
    const first = await untilResult(it);
    assert(resultOf(first).is_error, "the interrupted turn is an error result");
    prompts.push("again");
    const again = await untilResult(it);
    prompts.end();
    for await (const _ of { [Symbol.asyncIterator]: () => it });
    assert(textOf(again) === "back", textOf(again));
  }],
  ["permission mode and model change", [{ text: "ok" }], async (mock) => {
    const prompts = promptQueue();
    const q = query({ prompt: prompts, options: mock.options() });
    const it = q[Symbol.asyncIterator]();
    await q.setPermissionMode("acceptEdits");
    await q.setModel("claude-sonnet-4-5");
    prompts.push("hi");
    const messages = await untilResult(it);
    prompts.end();
    for await (const _ of { [Symbol.asyncIterator]: () => it });
    assert(resultOf(messages).subtype === "success", "success");
    const status = messages.filter((m) => m.type === "system" && m.subtype === "status");
    assert(status.some((m) => m.permissionMode === "acceptEdits"), JSON.stringify(status));
    const reqs = await mock.requests();
    assert(reqs[0].model === "claude-sonnet-4-5", reqs[0].model);
  }],
  // Each command writes a file: a read-only one (`echo x`) runs without asking anyone.
  ["can_use_tool allow and deny", [
    { tool_use: { id: "toolu_a", name: "Bash", input: { command: "echo allowed | tee allowed.txt" } } },
    { tool_use: { id: "toolu_b", name: "Bash", input: { command: "echo denied | tee denied.txt" } } },
    { text: "done" },
  ], async (mock) => {
    const asked = [];
    const canUseTool = async (name, input) => {
      asked.push(input.command);
      return input.command === "echo allowed | tee allowed.txt"
        ? { behavior: "allow", updatedInput: input }
        : { behavior: "deny", message: "not this one" };
    };
    const prompts = promptQueue();
    prompts.push("run two commands");
    prompts.end();
    const messages = await collect(prompts, mock.options({ canUseTool }));
    assert(JSON.stringify(asked) === JSON.stringify(["echo allowed | tee allowed.txt", "echo denied | tee denied.txt"]), JSON.stringify(asked));
    const reqs = JSON.stringify(await mock.requests());
    assert(reqs.includes("allowed") && reqs.includes("not this one"), "results reached the model");
    assert(resultOf(messages).subtype === "success", "success");
  }],
  ["PreToolUse callback hook blocks Bash", [
    { tool_use: { id: "toolu_h", name: "Bash", input: { command: "touch hooked" } } },
    { text: "blocked, fine" },
  ], async (mock) => {
    const seen = [];
    const hook = async (input) => {
      seen.push(input.tool_input.command);
      return { hookSpecificOutput: { hookEventName: "PreToolUse", permissionDecision: "deny", permissionDecisionReason: "Bash is blocked by policy" } };
    };
    const messages = await collect("delete everything", mock.options({
      hooks: { PreToolUse: [{ matcher: "Bash", hooks: [hook] }] },
      allowedTools: ["Bash"],
    }));
    assert(seen[0] === "touch hooked", JSON.stringify(seen));
    assert(!existsSync(join(mock.project, "hooked")), "the blocked command did not run");
    const reqs = await mock.requests();
    assert(JSON.stringify(reqs[1].messages.at(-1)).includes("Bash is blocked by policy"), "the reason reached the model");
    assert(resultOf(messages).subtype === "success", "success");
  }],
  ["partial messages", [{ text: "streamed" }], async (mock) => {
    const messages = await collect("stream please", mock.options({ includePartialMessages: true }));
    const events = messages.filter((m) => m.type === "stream_event").map((m) => m.event.type);
    assert(events.includes("message_start") && events.includes("content_block_delta"), JSON.stringify(events));
    assert(events.at(-1) === "message_stop", JSON.stringify(events));
  }],
  // Issue 25, item 5: each error result carries the reference's `errors` text, and the
  // SDK raises the reference's message from it (not "process exited with code 1").
  ["max turns (error result text)", [{ tool_use: { id: "toolu_m", name: "Bash", input: { command: "true" } } }], async (mock) => {
    const { messages, error } = await raised("loop", mock.options({ maxTurns: 1, allowedTools: ["Bash"] }));
    const r = checkErrorResult(messages, error, "error_max_turns", "Reached maximum number of turns (1)");
    assert(r.num_turns === 2, `num_turns counts the refused turn: ${r.num_turns}`);
  }],
  ["max budget (error result text)", [{ text: "PONG" }], async (mock) => {
    const { messages, error } = await raised("ping", mock.options({ maxBudgetUsd: 0.00001 }));
    checkErrorResult(messages, error, "error_max_budget_usd", "Reached maximum budget ($0.00001)");
  }],
  ["structured output retries (error result text)", Array.from({ length: 5 }, () => ({ text: "Lyon, I think." })), async (mock) => {
    const schema = { type: "object", properties: { city: { type: "string" } }, required: ["city"] };
    const { messages, error } = await raised("which city?", mock.options({ outputFormat: { type: "json_schema", schema } }));
    checkErrorResult(
      messages,
      error,
      "error_max_structured_output_retries",
      "Failed to provide valid structured output after 5 attempts",
    );
  }],
  ["resume", [{ text: "noted" }, { text: "42" }], async (mock) => {
    const first = await collect("remember 42", mock.options());
    const session = resultOf(first).session_id;
    const second = await collect("what was it?", mock.options({ resume: session }));
    assert(textOf(second) === "42", textOf(second));
    assert(resultOf(second).session_id === session, "same session");
    const reqs = await mock.requests();
    assert(JSON.stringify(reqs[1].messages).includes("remember 42"), "history resent");
  }],
  ["custom and appended system prompts", [{ text: "arr" }, { text: "rhyme" }], async (mock) => {
    await collect("a", mock.options({ systemPrompt: "You are a pirate." }));
    await collect("b", mock.options({ systemPrompt: { type: "preset", preset: "claude_code", append: "Always rhyme." } }));
    const reqs = await mock.requests();
    const s0 = JSON.stringify(reqs[0].system);
    const s1 = JSON.stringify(reqs[1].system);
    assert(s0.includes("You are a pirate.") && !s0.includes("strata"), s0);
    assert(s1.includes("Always rhyme.") && s1.includes("strata"), s1);
  }],
  ["structured output (outputFormat json_schema)", [
    { tool_use: { id: "toolu_s1", name: "StructuredOutput", input: { city: 7 } } },
    { tool_use: { id: "toolu_s2", name: "StructuredOutput", input: { city: "Lyon", population: 522000 } } },
  ], async (mock) => {
    const schema = {
      type: "object",
      properties: { city: { type: "string" }, population: { type: "integer" } },
      required: ["city", "population"],
    };
    const messages = await collect("which city?", mock.options({ outputFormat: { type: "json_schema", schema } }));
    const r = resultOf(messages);
    assert(r.subtype === "success", JSON.stringify(r));
    assert(JSON.stringify(r.structured_output) === JSON.stringify({ city: "Lyon", population: 522000 }), JSON.stringify(r));
    const reqs = await mock.requests();
    assert(reqs[0].tools.some((t) => t.name === "StructuredOutput"), "the StructuredOutput tool is offered");
    assert(JSON.stringify(reqs[1].messages.at(-1)).includes("/city"), "the mismatch is explained");
  }],
  // The SDK sends `mcpServers` in `initialize` by default and reads an absent
  // `mcp_servers_applied` as "not applied".
  ["MCP servers sent in initialize", [
    { tool_use: { id: "toolu_m1", name: "mcp__crashy__ok", input: {} } },
    { text: "it said fine" },
  ], async (mock) => {
    const crashy = join(process.env.STRATA_MCP_FIXTURES, "crashy.js");
    const q = query({
      prompt: "call mcp__crashy__ok",
      options: mock.options({
        mcpServers: { crashy: { command: "node", args: [crashy] } },
        allowedTools: ["mcp__crashy"],
      }),
    });
    const init = await q.initializationResult();
    assert(init.mcp_servers_applied === true, JSON.stringify(init));
    assert(init.hook_on_failure_supported === true, JSON.stringify(init));
    const out = [];
    for await (const m of q) out.push(m);
    assert(textOf(out) === "it said fine", textOf(out));
    const reqs = await mock.requests();
    assert(reqs[0].tools.some((t) => t.name === "mcp__crashy__ok"), "the server's tools are offered");
    assert(JSON.stringify(reqs[1].messages.at(-1)).includes("fine"), "the MCP tool's answer reached the model");
  }],
  ["fallback model on overload", [
    { error: { status: 529, type: "overloaded_error", message: "Overloaded" } },
    { text: "from the spare" },
  ], async (mock) => {
    const options = mock.options({ model: "claude-main", fallbackModel: "claude-spare" });
    options.env.STRATA_MAX_RETRIES = "0";
    const messages = await collect("hi", options);
    assert(textOf(messages) === "from the spare", textOf(messages));
    const reqs = await mock.requests();
    assert(JSON.stringify(reqs.map((r) => r.model)) === JSON.stringify(["claude-main", "claude-spare"]), JSON.stringify(reqs.map((r) => r.model)));
  }],
];

// Run from the directory the SDK was installed in (scripts/sdk-compat/run copies this
// file there, so the import above resolves).
const version = JSON.parse(
  readFileSync(join(process.cwd(), "node_modules/@anthropic-ai/claude-agent-sdk/package.json"), "utf8"),
).version;
console.log(`@anthropic-ai/claude-agent-sdk ${version}`);
const only = process.argv.slice(2);
let failed = 0;
for (const [name, replies, run] of cases) {
  if (only.length && !only.some((o) => name.includes(o))) continue;
  const mock = await Mock.start(replies);
  try {
    await Promise.race([run(mock), sleep(60000).then(() => { throw new Error("timed out after 60 s"); })]);
    console.log(`PASS typescript: ${name}`);
  } catch (e) {
    failed++;
    console.log(`FAIL typescript: ${name}\n  ${e.stack ?? e}`);
  } finally {
    mock.close();
  }
}
process.exit(failed ? 1 : 0);
