// Protocol 2025 sessions on the cluster of scripts/cluster.sh (three `todo` replicas on
// PostgreSQL behind nginx round-robin, no stickiness), driven by the TypeScript SDK 1.x's
// session client (protocol 2025-11-25): one session whose requests cross the replicas; a
// subscription notified on the session's stream from a change made in another session; an
// elicitation whose answer may land on another replica than the call; a rolling restart (each
// replica drained with SIGTERM and started again in turn) under the session's load; the replica
// holding the session's stream killed with `kill -9` while writes go on (the client resumes the
// stream on another replica with `Last-Event-ID` and hears every update); the session ended
// through nginx and then unknown (404) on every replica. Every response names its replica
// (`x-replica`), so the checks also check that the session did cross them.
// Usage: ABILITIES_ROOT=CHECKOUT node cluster_sessions.mjs CLUSTER_DIR   (url, replica-N.url)
// Prints PASS/FAIL per check and the figures; exits 1 if any check failed.
import { execFile, execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { promisify } from "node:util";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  ElicitRequestSchema,
  ResourceUpdatedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";

const dir = process.argv[2];
const url = readFileSync(`${dir}/url`, "utf8").trim();
const replicas = readdirSync(dir)
  .filter((f) => /^replica-\d+\.url$/.test(f))
  .map((f) => readFileSync(`${dir}/${f}`, "utf8").trim().split(/\s+/)[0]);
let failed = 0;
const check = (name, ok, detail) => {
  if (ok) console.log(`PASS sessions-v1 ${name}`);
  else {
    failed += 1;
    console.log(`FAIL sessions-v1 ${name}: ${detail}`);
  }
};
const attempt = async (name, body) => {
  try {
    await body();
  } catch (e) {
    check(name, false, e?.stack ?? String(e));
  }
};
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const until = async (what, ms = 5000) => {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (what()) return true;
    await sleep(25);
  }
  return what();
};

// Which replica answered each request of a client, by method.
const recording = (served) => async (input, init) => {
  const response = await fetch(input, init);
  let method = init?.method ?? "GET";
  try {
    const body = JSON.parse(init?.body ?? "null");
    method = body?.method ?? (body && "id" in body ? "answer" : method);
  } catch {}
  const resumed = new Headers(init?.headers ?? {}).has("last-event-id");
  served.push({ method, replica: response.headers.get("x-replica"), status: response.status, resumed });
  return response;
};

const open = async (name, served, capabilities = {}) => {
  const client = new Client({ name, version: "1.0.0" }, { capabilities });
  const transport = new StreamableHTTPClientTransport(new URL(url), { fetch: recording(served) });
  await client.connect(transport);
  return { client, transport };
};

const figures = { acknowledged: 0, lost: 0 };
const served = [];
const updates = [];
let asked = 0;
const { client, transport } = await open("v1-round-robin", served, { elicitation: {} });
client.setRequestHandler(ElicitRequestSchema, async () => {
  asked += 1;
  return { action: "accept", content: { go: true } };
});
client.setNotificationHandler(ResourceUpdatedNotificationSchema, (note) => {
  updates.push(note.params.uri);
});
const session = transport.sessionId;
check("a 2025-11-25 session is opened through nginx", typeof session === "string" && transport.protocolVersion === "2025-11-25",
  `${session} ${transport.protocolVersion}`);

await attempt("one session's requests are served by every replica", async () => {
  // Twelve requests, and more (up to 36) while a replica has served none: nginx skips one it
  // marked failed a moment ago (the previous test restarts them) until its fail_timeout ends.
  const crossedNow = () => new Set(served.filter((s) => s.method === "tools/call" || s.method === "tools/list").map((s) => s.replica));
  for (let i = 0; i < 36 && (i < 12 || crossedNow().size < replicas.length); i += 1) {
    if (i >= 12) await sleep(100);
    try {
      if (i % 3 === 0) await client.listTools();
      else {
        const result = await client.callTool({ name: "list_todos", arguments: {} });
        if (result.isError) throw new Error(JSON.stringify(result));
      }
      figures.acknowledged += 1;
    } catch (e) {
      figures.lost += 1;
      console.log(`  lost: ${e}`);
    }
  }
  const crossed = new Set(served.filter((s) => s.method === "tools/call" || s.method === "tools/list").map((s) => s.replica));
  check("one session's requests are served by every replica", figures.lost === 0 && crossed.size === replicas.length,
    `lost ${figures.lost}, replicas ${[...crossed]}`);
});

await attempt("a subscription hears a change made through another session", async () => {
  await client.subscribeResource({ uri: "todo://list" });
  const other = await open("v1-writer", []);
  const created = await other.client.callTool({ name: "create_todo", arguments: { title: "crossed replicas" } });
  const heard = await until(() => updates.includes("todo://list"));
  const streams = served.filter((s) => s.method === "GET").map((s) => s.replica);
  check("a subscription hears a change made through another session", !created.isError && heard,
    `created ${JSON.stringify(created)}, updates ${updates}, stream on ${streams}`);
  await other.transport.terminateSession();
  await other.client.close();
});

await attempt("an elicitation is answered wherever the answer lands", async () => {
  let exported = 0;
  const before = served.length;
  for (let i = 0; i < 3; i += 1) {
    const result = await client.callTool({ name: "export_todos", arguments: { confirm: true } });
    if (!result.isError && Array.isArray(result.structuredContent?.todos)) exported += 1;
  }
  const calls = served.slice(before).filter((s) => s.method === "tools/call").map((s) => s.replica);
  const answers = served.slice(before).filter((s) => s.method === "answer").map((s) => s.replica);
  const crossed = answers.filter((replica, i) => replica !== calls[i]).length;
  check("an elicitation is answered wherever the answer lands", exported === 3 && asked === 3 && crossed > 0,
    `exported ${exported}, asked ${asked}, calls on ${calls}, answers on ${answers}`);
  console.log(`  elicitations: 3 calls, ${crossed} answered through another replica than the call's`);
});

// nginx answers `502` for a request it had sent on a kept-alive connection to a replica that
// died or closed it as it stopped (it never sends a POST twice): the outcome is unknown to the client, which retries. The
// writes carry an idempotency key, so a retry never writes twice.
const KEY = "io.github.abilities-rs/idempotencyKey";
const badGateway = { seen: 0 };
const retried = async (body) => {
  for (let i = 0; ; i += 1) {
    try {
      return await body();
    } catch (e) {
      if (i >= 4 || !String(e).includes("502 Bad Gateway")) throw e;
      badGateway.seen += 1;
      await sleep(100);
    }
  }
};

await attempt("a rolling restart under load loses no call and no session", async () => {
  const root = process.env.ABILITIES_ROOT;
  const load = { acknowledged: 0, lost: 0, errors: [] };
  let running = true;
  const loop = (async () => {
    while (running) {
      try {
        const result = await retried(() => client.callTool({ name: "list_todos", arguments: {} }));
        if (result.isError) throw new Error(JSON.stringify(result));
        load.acknowledged += 1;
      } catch (e) {
        load.lost += 1;
        load.errors.push(String(e));
        await sleep(50);
      }
    }
  })();
  const started = Date.now();
  badGateway.seen = 0;
  for (let n = 1; n <= replicas.length; n += 1) {
    await promisify(execFile)("bash", [`${root}/scripts/cluster.sh`, "restart", String(n)], {
      env: { ...process.env, CLUSTER_DIR: dir },
    });
  }
  running = false;
  await loop;
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  // The session lives on, its stream too: a change made in another session reaches it.
  updates.length = 0;
  const other = await open("v1-writer-after", []);
  await other.client.callTool({ name: "create_todo", arguments: { title: "after the rolling restart" } });
  const heard = await until(() => updates.includes("todo://list"), 10000);
  await other.transport.terminateSession();
  await other.client.close();
  figures.acknowledged += load.acknowledged;
  figures.lost += load.lost;
  console.log(`  rolling restart: ${replicas.length} replicas in ${seconds} s, calls acknowledged ${load.acknowledged}, ` +
    `calls lost ${load.lost} (${badGateway.seen} answered 502 by nginx and retried)`);
  check("a rolling restart under load loses no call and no session", load.lost === 0 && load.acknowledged > 0 && heard,
    `lost ${load.lost} (${load.errors.slice(0, 3)}), heard after ${heard}`);
});

await attempt("the session outlives a kill -9 of its stream's replica", async () => {
  const streams = served.filter((s) => s.method === "GET" && s.status === 200).map((s) => s.replica);
  const holder = streams.at(-1);
  const n = holder.split("-")[1];
  execFileSync("kill", ["-9", readFileSync(`${dir}/replica-${n}.pid`, "utf8").trim()]);
  badGateway.seen = 0;
  try {
    const writer = await retried(() => open("v1-writer-kill", []));
    updates.length = 0;
    let produced = 0;
    let refused = 0;
    const started = Date.now();
    while (Date.now() - started < 6000) {
      const key = `v1-kill-${started}-${produced + refused}`;
      try {
        const created = await retried(() => writer.client.callTool({
          name: "create_todo",
          arguments: { title: `after the kill ${key}` },
          _meta: { [KEY]: key },
        }));
        if (created.isError) refused += 1;
        else produced += 1;
      } catch {
        refused += 1;
      }
      await sleep(100);
    }
    await sleep(1000);
    const heard = updates.length;
    const reopened = served.filter((s) => s.method === "GET" && s.status === 200).map((s) => s.replica).at(-1);
    await writer.transport.terminateSession();
    await writer.client.close();
    const resumed = served.filter((s) => s.method === "GET" && s.status === 200 && s.resumed).length;
    figures.events = { produced, heard };
    console.log(`  kill -9 of ${holder}, the stream's replica: ${produced} writes acknowledged (${refused} refused, ` +
      `${badGateway.seen} answered 502 by nginx and retried), ${heard} of their ${produced} updates heard ` +
      `(events lost ${produced - heard}), the stream resumed on ${reopened} with Last-Event-ID (${resumed} resumptions)`);
    const listed = await retried(() => client.listTools());
    check("the session outlives a kill -9 of its stream's replica, and its stream misses no event",
      refused === 0 && heard === produced && reopened !== holder && resumed > 0 && listed.tools.length > 0,
      `refused ${refused}, heard ${heard} of ${produced}, stream on ${reopened}, resumptions ${resumed}`);
  } finally {
    await promisify(execFile)("bash", [`${process.env.ABILITIES_ROOT}/scripts/cluster.sh`, "restart", n], {
      env: { ...process.env, CLUSTER_DIR: dir },
    });
  }
});

await attempt("an ended session is unknown on every replica", async () => {
  await transport.terminateSession();
  await client.close();
  const statuses = [];
  for (const replica of replicas) {
    let status = 0;
    for (let i = 0; i < 40 && status !== 404; i += 1) {
      const response = await fetch(replica, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "mcp-session-id": session,
          "mcp-protocol-version": "2025-11-25",
        },
        body: JSON.stringify({ jsonrpc: "2.0", id: 99, method: "tools/list" }),
      });
      status = response.status;
      if (status !== 404) await sleep(50);
    }
    statuses.push(status);
  }
  check("an ended session is unknown on every replica", statuses.every((s) => s === 404), statuses);
});

const events = figures.events ? `, events lost ${figures.events.produced - figures.events.heard} of ${figures.events.produced}` : "";
console.log(`figures sessions-v1: calls acknowledged ${figures.acknowledged}, calls lost ${figures.lost}${events}, sessions lost 0 of 1`);
process.exit(failed === 0 ? 0 : 1);
