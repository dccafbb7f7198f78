// The official TypeScript SDK client against the `todo` example's MCP-AQL single endpoint
// over stdio. Usage: node ts_aql.mjs CMD [ARGS...]
// Prints PASS/FAIL per check; exits 1 if any check failed.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [command, ...args] = process.argv.slice(2);
let failed = 0;
const check = (name, ok, detail) => {
  if (ok) console.log(`PASS ts aql ${name}`);
  else {
    failed += 1;
    console.log(`FAIL ts aql ${name}: ${detail}`);
  }
};
const client = new Client({ name: "abilities-interop-ts", version: "1.0.0" });
await client.connect(new StdioClientTransport({ command, args, stderr: "inherit" }));
const aql = async (request) => {
  const r = await client.callTool({ name: "mcp_aql", arguments: request });
  return { envelope: JSON.parse(r.content[0].text), isError: r.isError };
};
try {
  const { tools } = await client.listTools();
  check("tools/list", tools.length === 1 && tools[0].name === "mcp_aql", JSON.stringify(tools.map((t) => t.name)));
  const { envelope: list } = await aql({ operation: "introspect", params: { query: "operations" } });
  const names = list.data.operations.map((o) => o.name);
  check("introspect", list.success && list.data._protocol.version === "1.0.0-draft" && names.includes("list_todos"), JSON.stringify(list));
  const { envelope: created } = await aql({ operation: "create_todo", params: { title: "interop", priority: "high" } });
  check("create_todo", created.success && created.data.title === "interop", JSON.stringify(created));
  const { envelope: high } = await aql({
    operation: "list_todos",
    params: { filter: { priority: "high" }, fields: ["title"], sort: { field: "id", order: "desc" } },
  });
  check("list_todos query", high.success && high.data.items[0].title === "interop", JSON.stringify(high));
  const id = created.data.id;
  const { envelope: gate, isError } = await aql({ operation: "delete_todo", params: { id } });
  check(
    "delete_todo asks for confirmation",
    !gate.success && gate.error.code === "CONFIRMATION_REQUIRED" && isError === false,
    JSON.stringify(gate),
  );
  const { envelope: deleted } = await aql({
    operation: "delete_todo",
    params: { id, _confirmation: gate.confirmation?.token },
  });
  check("delete_todo with the token", deleted.success && deleted.data.deleted === true, JSON.stringify(deleted));
  const { envelope: unknown } = await aql({ operation: "nope" });
  check("unknown operation", unknown.error?.code === "NOT_FOUND_OPERATION", JSON.stringify(unknown));
} catch (e) {
  check("session", false, e?.message ?? String(e));
}
await client.close();
process.exit(failed ? 1 : 0);
