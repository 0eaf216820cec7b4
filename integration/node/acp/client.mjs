// An ACP client built on the official TypeScript SDK, as an editor would
// use it: integration/acp_test.go runs it against `pi-remote acp` and
// checks what it prints (one JSON object: every answer, update and
// permission request it saw) and what happened on the host.
//
// Usage: node client.mjs CONFIG_JSON, where CONFIG_JSON is
//   {"command": "/path/pi-remote", "args": [...], "cwd": "/editor/dir",
//    "prompts": {"edit": "...", "long": "...", "reject": "..."},
//    "startedMarker": "text bash prints once the long command runs",
//    "rejectCalls": ["tool call ids to answer reject"]}
//
// Steps: initialize; an unknown method; session/new; the edit prompt; the
// long prompt, cancelled (session/cancel) once its bash has printed the
// marker; the reject prompt; then a second agent process, where
// session/load replays the session.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const cfg = JSON.parse(process.argv[2]);
const out = { permissions: [] };

// A turn's updates, in arrival order; the current turn's list is where
// session/update notifications go.
let updates = [];
let onUpdate = () => {};

function startAgent() {
  const child = spawn(cfg.command, cfg.args, { stdio: ["pipe", "pipe", "inherit"] });
  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
  return { child, stream, exited };
}

function app() {
  return acp
    .client({ name: "pi-remote-test-client" })
    .onNotification("session/update", ({ params }) => {
      updates.push(params.update);
      onUpdate(params);
    })
    .onRequest("session/request_permission", ({ params }) => {
      const id = params.toolCall.toolCallId;
      const reject = (cfg.rejectCalls || []).includes(id);
      // seen: how many of the turn's updates had arrived when it asked.
      out.permissions.push({ toolCallId: id, options: params.options.map((o) => o.kind), answered: reject ? "reject_once" : "allow_once", seen: updates.length });
      const option = params.options.find((o) => o.kind === (reject ? "reject_once" : "allow_once"));
      return { outcome: { outcome: "selected", optionId: option.optionId } };
    });
}

async function errorOf(p) {
  try {
    await p;
    return null;
  } catch (e) {
    return { code: e.code, message: e.message };
  }
}

// First agent: a session and three prompts.
{
  const agent = startAgent();
  await app().connectWith(agent.stream, async (ctx) => {
    out.initialize = await ctx.request("initialize", {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: { fs: { readTextFile: false, writeTextFile: false } },
    });
    out.unknownMethod = await errorOf(ctx.request("session/teleport", { sessionId: "x" }));
    updates = [];
    const created = await ctx.request("session/new", { cwd: cfg.cwd, mcpServers: [] });
    out.sessionId = created.sessionId;
    out.modes = created.modes;

    const prompt = async (text) => {
      updates = [];
      const r = await ctx.request("session/prompt", { sessionId: out.sessionId, prompt: [{ type: "text", text }] });
      return { stopReason: r.stopReason, updates };
    };
    // The commands are advertised once the session is known; they may
    // arrive before or with the first prompt's updates.
    const early = updates;
    out.edit = await prompt(cfg.prompts.edit);
    out.commands = [...early, ...out.edit.updates].find((u) => u.sessionUpdate === "available_commands_update") || null;

    // Cancel once the long command is seen running (its output streamed).
    let cancelled = false;
    onUpdate = (params) => {
      const u = params.update;
      const text = JSON.stringify(u.content || []);
      if (!cancelled && u.sessionUpdate === "tool_call_update" && text.includes(cfg.startedMarker)) {
        cancelled = true;
        ctx.notify("session/cancel", { sessionId: out.sessionId });
      }
    };
    out.long = await prompt(cfg.prompts.long);
    out.long.cancelSent = cancelled;
    onUpdate = () => {};

    out.reject = await prompt(cfg.prompts.reject);
  });
  agent.child.stdin.end();
  out.firstExit = await agent.exited;
}

// Second agent: the editor restarted; the session is loaded.
{
  const agent = startAgent();
  await app().connectWith(agent.stream, async (ctx) => {
    const init = await ctx.request("initialize", { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {} });
    if (!init.agentCapabilities.loadSession) throw new Error("loadSession not advertised");
    updates = [];
    await ctx.request("session/load", { sessionId: out.sessionId, cwd: cfg.cwd, mcpServers: [] });
    out.load = { updates };
    out.loadUnknown = await errorOf(ctx.request("session/load", { sessionId: "0123456789abcdef", cwd: cfg.cwd, mcpServers: [] }));
  });
  agent.child.stdin.end();
  out.secondExit = await agent.exited;
}

process.stdout.write(JSON.stringify(out) + "\n");
