// The official TypeScript SDK client against an abilities server.
// Usage: node ts_client.mjs EXPECT.json stdio CMD [ARGS...]
//        node ts_client.mjs EXPECT.json http URL
// Prints PASS/FAIL per check; exits 1 if any check failed.
import { readFileSync } from "node:fs";
import { isDeepStrictEqual } from "node:util";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [expectPath, mode, ...target] = process.argv.slice(2);
const expect = JSON.parse(readFileSync(expectPath, "utf8"));
let failed = 0;
const check = (name, ok, detail) => {
  if (ok) console.log(`PASS ts ${mode} ${name}`);
  else {
    failed += 1;
    console.log(`FAIL ts ${mode} ${name}: ${detail}`);
  }
};

const transport =
  mode === "stdio"
    ? new StdioClientTransport({ command: target[0], args: target.slice(1), stderr: "inherit" })
    : new StreamableHTTPClientTransport(new URL(target[0]));
const client = new Client({ name: "abilities-interop-ts", version: "1.0.0" });
await client.connect(transport);

// listTools also caches each outputSchema, so callTool validates structuredContent against it.
const { tools } = await client.listTools();
const names = tools.map((t) => t.name).sort();
check("tools/list names", isDeepStrictEqual(names, [...expect.tools].sort()), JSON.stringify(names));
check(
  "every schema is an object",
  tools.every((t) => t.inputSchema.type === "object" && (!t.outputSchema || t.outputSchema.type === "object")),
  "a schema is not type object",
);

for (const key of ["count_posts", "get_post"]) {
  const { name, arguments: args, structuredContent } = expect[key];
  try {
    const r = await client.callTool({ name, arguments: args });
    check(`${name} isError`, r.isError === false, JSON.stringify(r));
    check(`${name} structuredContent`, isDeepStrictEqual(r.structuredContent, structuredContent), JSON.stringify(r.structuredContent));
    const text = r.content.length === 1 && r.content[0].type === "text" ? JSON.parse(r.content[0].text) : null;
    check(`${name} text block`, isDeepStrictEqual(text, structuredContent), JSON.stringify(r.content));
  } catch (e) {
    check(`${name} call`, false, e?.message ?? String(e));
  }
}

for (const key of ["missing_post", "site_mismatch"]) {
  const { name, arguments: args, code } = expect[key];
  try {
    const r = await client.callTool({ name, arguments: args });
    check(`${key} isError`, r.isError === true, JSON.stringify(r));
    const error = JSON.parse(r.content[0].text);
    check(`${key} code`, error.code === code && typeof error.message === "string", r.content[0].text);
  } catch (e) {
    check(`${key} call`, false, e?.message ?? String(e));
  }
}

try {
  await client.callTool({ name: "no-such-tool", arguments: {} });
  check("unknown tool is a JSON-RPC error", false, "the call succeeded");
} catch (e) {
  check("unknown tool is a JSON-RPC error", e?.code === -32602, `${e?.code} ${e?.message}`);
}

await client.close();
process.exit(failed ? 1 : 0);
