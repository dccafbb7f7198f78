// The TypeScript SDK v2 client (@modelcontextprotocol/client) against every surface of the
// `site` example over HTTP, in one of its version negotiation modes: `pin` (2026-07-28 only)
// or `auto` (2026-07-28 when the server speaks it). Then, over the same HTTP endpoint, a
// background task of protocol 2026-07-28 with raw requests: the SDK refuses `resultType:
// "task"` answers (UNSUPPORTED_RESULT_TYPE), so it is left out of that part.
// Usage: node ts2_client.mjs EXPECT.json pin|auto SURFACES_BASE AQL_URL CRUDE_URL
// Prints PASS/FAIL per check; exits 1 if any check failed.
import { readFileSync } from "node:fs";
import { isDeepStrictEqual } from "node:util";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

const [expectPath, mode, base, aqlUrl, crudeUrl] = process.argv.slice(2);
const expect = JSON.parse(readFileSync(expectPath, "utf8"));
const negotiation = mode === "pin" ? { mode: { pin: "2026-07-28" } } : { mode: "auto" };
let failed = 0;
const check = (name, ok, detail) => {
  if (ok) console.log(`PASS ts2 ${mode} ${name}`);
  else {
    failed += 1;
    console.log(`FAIL ts2 ${mode} ${name}: ${detail}`);
  }
};
const attempt = async (name, body) => {
  try {
    await body();
  } catch (e) {
    check(name, false, e?.message ?? String(e));
  }
};
const connect = async (url) => {
  const client = new Client({ name: "abilities-interop-ts2", version: "1.0.0" }, { versionNegotiation: negotiation });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  check(`${url} era`, client.getProtocolEra() === "modern", client.getProtocolEra());
  return client;
};
const countPosts = expect.count_posts.structuredContent.result;

await attempt("native", async () => {
  const client = await connect(base + "/mcp");
  const { tools } = await client.listTools();
  check("native tools/list", isDeepStrictEqual(tools.map((t) => t.name).sort(), expect.tools), JSON.stringify(tools.map((t) => t.name)));
  const count = await client.callTool({ name: expect.count_posts.name, arguments: expect.count_posts.arguments });
  check("native count_posts", isDeepStrictEqual(count.structuredContent, expect.count_posts.structuredContent), JSON.stringify(count));
  const missing = await client.callTool({ name: expect.missing_post.name, arguments: expect.missing_post.arguments });
  check(
    "native missing post",
    missing.isError === true && JSON.parse(missing.content[0].text).code === expect.missing_post.code,
    JSON.stringify(missing),
  );
  // Without the tasks extension, a task-capable tool answers in the request.
  const exported = await client.callTool({ name: "wp_export_posts", arguments: { delay_ms: 50 } });
  const data = exported.structuredContent;
  check("native wp_export_posts in the request", data?.exported === data?.posts?.length && data.exported > 0, JSON.stringify(exported).slice(0, 300));
  await client.close();
});

await attempt("standard", async () => {
  const client = await connect(base + "/mcp/standard");
  const count = await client.callTool({ name: expect.count_posts.name, arguments: expect.count_posts.arguments });
  check("standard count_posts", isDeepStrictEqual(count.structuredContent, expect.count_posts.structuredContent), JSON.stringify(count));
  await client.close();
});

await attempt("meta", async () => {
  const client = await connect(base + "/mcp/meta");
  const run = await client.callTool({
    name: "mcp-adapter-execute-ability",
    arguments: { ability_name: "my-plugin/count-posts", parameters: "post" },
  });
  check("meta execute", isDeepStrictEqual(run.structuredContent, { success: true, data: countPosts }), JSON.stringify(run));
  await client.close();
});

const aqlCount = async (client, tool, label) => {
  const { tools } = await client.listTools();
  check(`${label} tools/list`, tools.some((t) => t.name === tool), JSON.stringify(tools.map((t) => t.name)));
  const r = await client.callTool({ name: tool, arguments: { operation: "my_plugin_count_posts", params: { input: "post" } } });
  const envelope = JSON.parse(r.content[0].text);
  check(`${label} count_posts`, envelope.success === true && envelope.data === countPosts, JSON.stringify(envelope));
};
await attempt("aql-single", async () => {
  const client = await connect(aqlUrl);
  await aqlCount(client, "mcp_aql", "aql-single");
  await client.close();
});
await attempt("aql-semantic", async () => {
  const client = await connect(crudeUrl);
  await aqlCount(client, "mcp_aql_read", "aql-semantic");
  await client.close();
});

// A background task over HTTP, as a client declaring the tasks extension sends it.
if (mode === "pin") {
  await attempt("task", async () => {
    const url = base + "/mcp";
    let id = 0;
    const send = async (method, params, name) => {
      params._meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": { extensions: { "io.modelcontextprotocol/tasks": {} } },
      };
      const response = await fetch(url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "mcp-protocol-version": "2026-07-28",
          "mcp-method": method,
          "mcp-name": name,
        },
        body: JSON.stringify({ jsonrpc: "2.0", id: (id += 1), method, params }),
      });
      const text = await response.text();
      const line = text.split("\n").find((l) => l.startsWith("data:"));
      return JSON.parse(line ? line.slice(5) : text);
    };
    const created = (await send("tools/call", { name: "wp_export_posts", arguments: { delay_ms: 400 } }, "wp_export_posts")).result;
    check("task created", created.resultType === "task" && created.status === "working" && created.ttlMs > 0, JSON.stringify(created));
    let task = created;
    for (let i = 0; i < 100 && !["completed", "failed", "cancelled"].includes(task.status); i += 1) {
      await new Promise((r) => setTimeout(r, 50));
      task = (await send("tasks/get", { taskId: created.taskId }, created.taskId)).result;
    }
    const data = task.result?.structuredContent;
    check(
      "task completed with every post",
      task.status === "completed" && data?.exported === data?.posts?.length && data.exported > 0,
      JSON.stringify(task).slice(0, 400),
    );
  });
}

console.log(failed === 0 ? `ts2 ${mode}: all checks passed` : `ts2 ${mode}: ${failed} checks failed`);
process.exit(failed === 0 ? 0 : 1);
