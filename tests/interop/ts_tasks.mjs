// The TypeScript SDK 1.x's task client (protocol 2025-11-25's experimental tasks) against an
// abilities server: the export runs as a task (created, its status streamed, its result
// read), is polled and listed, and a long one is cancelled.
// Usage: node ts_tasks.mjs stdio CMD [ARGS...]
//        node ts_tasks.mjs http URL
// The export is the `site` example's (`wp_export_posts`, with `wp_get_post` a tool that is no
// task) unless EXPORT_TOOL and PLAIN_TOOL name others taking `delay_ms`.
// Prints PASS/FAIL per check; exits 1 if any check failed.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [mode, ...target] = process.argv.slice(2);
const exportName = process.env.EXPORT_TOOL ?? "wp_export_posts";
const plainName = process.env.PLAIN_TOOL ?? "wp_get_post";
let failed = 0;
const check = (name, ok, detail) => {
  if (ok) console.log(`PASS ts tasks ${mode} ${name}`);
  else {
    failed += 1;
    console.log(`FAIL ts tasks ${mode} ${name}: ${detail}`);
  }
};

const transport =
  mode === "stdio"
    ? new StdioClientTransport({ command: target[0], args: target.slice(1), stderr: "inherit" })
    : new StreamableHTTPClientTransport(new URL(target[0]));
const client = new Client({ name: "abilities-interop-ts-tasks", version: "1.0.0" });
await client.connect(transport);

check("protocol 2025-11-25", transport.protocolVersion === undefined || transport.protocolVersion === "2025-11-25",
  String(transport.protocolVersion));
const tasks = client.getServerCapabilities()?.tasks;
check("capabilities.tasks", tasks?.requests?.tools?.call !== undefined && tasks?.list && tasks?.cancel,
  JSON.stringify(client.getServerCapabilities()));

// The task client needs the tools (and their outputSchema) known first.
const { tools } = await client.listTools();
const exportTool = tools.find((t) => t.name === exportName);
check("execution.taskSupport", exportTool?.execution?.taskSupport === "optional", JSON.stringify(exportTool?.execution));
const plain = tools.find((t) => t.name === plainName);
check("a plain tool says nothing of tasks", plain && plain.execution === undefined, JSON.stringify(plain?.execution));

// Run: created, statuses, result.
const seen = [];
let taskId;
let result;
for await (const message of client.experimental.tasks.callToolStream(
  { name: exportName, arguments: { delay_ms: 400 } },
  undefined,
  { task: { ttl: 60000 } },
)) {
  seen.push(message.type);
  if (message.type === "taskCreated") taskId = message.task.taskId;
  if (message.type === "result") result = message.result;
  if (message.type === "error") check("the export's stream", false, String(message.error));
}
check("the export became a task", typeof taskId === "string" && seen[0] === "taskCreated", JSON.stringify(seen));
check("its result", result?.isError === false && typeof result?.structuredContent?.exported === "number",
  JSON.stringify(result));
check("its result names its task", result?._meta?.["io.modelcontextprotocol/related-task"]?.taskId === taskId,
  JSON.stringify(result?._meta));

// Poll and list.
const polled = await client.experimental.tasks.getTask(taskId);
check("tasks/get", polled.taskId === taskId && polled.status === "completed" && typeof polled.createdAt === "string",
  JSON.stringify(polled));
const listed = await client.experimental.tasks.listTasks();
check("tasks/list", listed.tasks.some((t) => t.taskId === taskId && t.status === "completed"), JSON.stringify(listed));

// Cancel a long one.
const long = client.experimental.tasks.callToolStream(
  { name: exportName, arguments: { delay_ms: 600000 } },
  undefined,
  { task: { ttl: 60000 } },
);
const first = await long.next();
const longId = first.value?.task?.taskId;
check("a long export became a task", first.value?.type === "taskCreated", JSON.stringify(first.value));
const cancelled = await client.experimental.tasks.cancelTask(longId);
check("tasks/cancel", cancelled.taskId === longId && cancelled.status === "cancelled", JSON.stringify(cancelled));
const after = await client.experimental.tasks.getTask(longId);
check("cancelled stays cancelled", after.status === "cancelled", JSON.stringify(after));
let ended;
for await (const message of long) ended = message;
check("the cancelled stream ends with an error", ended?.type === "error", JSON.stringify(ended));
try {
  await client.experimental.tasks.cancelTask(longId);
  check("cancelling an ended task is refused", false, "accepted");
} catch (e) {
  check("cancelling an ended task is refused", e?.code === -32602, `${e?.code} ${e?.message}`);
}
try {
  await client.experimental.tasks.getTask("no-such-task");
  check("an unknown task is refused", false, "accepted");
} catch (e) {
  check("an unknown task is refused", e?.code === -32602, `${e?.code} ${e?.message}`);
}

await client.close();
process.exit(failed ? 1 : 0);
