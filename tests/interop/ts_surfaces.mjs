// The official TypeScript SDK client against the meta and standard surfaces of one server
// (`site --mode all`). Usage: node ts_surfaces.mjs EXPECT.json BASE_URL
// Prints PASS/FAIL per check; exits 1 if any check failed.
import { readFileSync } from "node:fs";
import { isDeepStrictEqual } from "node:util";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [expectPath, base] = process.argv.slice(2);
const expect = JSON.parse(readFileSync(expectPath, "utf8"));
let failed = 0;
const check = (name, ok, detail) => {
  if (ok) console.log(`PASS ts ${name}`);
  else {
    failed += 1;
    console.log(`FAIL ts ${name}: ${detail}`);
  }
};
const connect = async (path) => {
  const client = new Client({ name: "abilities-interop-ts", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(base + path)));
  // Caches each outputSchema, so callTool validates structuredContent against it.
  await client.listTools();
  return client;
};
const attempt = async (name, body) => {
  try {
    await body();
  } catch (e) {
    check(name, false, e?.message ?? String(e));
  }
};
const countPosts = expect.count_posts.structuredContent.result;

// Meta surface: three tools; parameters in the ability's own shape.
const meta = await connect("/mcp/meta");
await attempt("meta", async () => {
  const { tools } = await meta.listTools();
  check(
    "meta tools/list",
    isDeepStrictEqual(tools.map((t) => t.name), [
      "mcp-adapter-discover-abilities",
      "mcp-adapter-get-ability-info",
      "mcp-adapter-execute-ability",
    ]),
    JSON.stringify(tools.map((t) => t.name)),
  );
  const discovered = await meta.callTool({ name: "mcp-adapter-discover-abilities", arguments: {} });
  const listed = discovered.structuredContent.abilities.map((a) => a.name);
  check("meta discover", listed.includes("my-plugin/count-posts"), JSON.stringify(listed));
  const info = await meta.callTool({
    name: "mcp-adapter-get-ability-info",
    arguments: { ability_name: "my-plugin/count-posts" },
  });
  check("meta get-info input_schema", info.structuredContent.input_schema.type === "string", JSON.stringify(info));
  const run = await meta.callTool({
    name: "mcp-adapter-execute-ability",
    arguments: { ability_name: "my-plugin/count-posts", parameters: "post" },
  });
  check(
    "meta execute flattened",
    isDeepStrictEqual(run.structuredContent, { success: true, data: countPosts }),
    JSON.stringify(run),
  );
  const missing = await meta.callTool({
    name: "mcp-adapter-execute-ability",
    arguments: { ability_name: "wp_get_post", parameters: { id: 999 } },
  });
  check(
    "meta execute failure",
    missing.isError === true && JSON.parse(missing.content[0].text).code === "NOT_FOUND_RESOURCE",
    JSON.stringify(missing),
  );
});
await meta.close();

// Standard surface: native tools, pretty text, JSON-RPC errors, string booleans.
const standard = await connect("/mcp/standard");
await attempt("standard", async () => {
  const { tools } = await standard.listTools();
  const names = tools.map((t) => t.name).sort();
  check("standard tools/list", isDeepStrictEqual(names, [...expect.tools].sort()), JSON.stringify(names));
  const { name, arguments: args, structuredContent } = expect.get_post;
  const got = await standard.callTool({ name, arguments: args });
  check("standard structuredContent", isDeepStrictEqual(got.structuredContent, structuredContent), JSON.stringify(got));
  check(
    "standard pretty text",
    got.content[0].text === JSON.stringify(structuredContent, null, 2),
    JSON.stringify(got.content),
  );
  const dry = await standard.callTool({
    name: "wp_create_post",
    arguments: { title: "Draft", dry_run: "yes" },
  });
  check("standard dry_run \"yes\"", dry.structuredContent?.id === 0, JSON.stringify(dry));
  try {
    await standard.callTool({ name: "wp_get_post", arguments: { id: 999 } });
    check("standard error is JSON-RPC", false, "the call succeeded");
  } catch (e) {
    check(
      "standard error is JSON-RPC",
      e?.code === -32602 && e?.data?.code === "NOT_FOUND_RESOURCE",
      `${e?.code} ${JSON.stringify(e?.data)}`,
    );
  }
});
await standard.close();
process.exit(failed ? 1 : 0);
