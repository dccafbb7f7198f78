// The official TypeScript SDK client (v2) against abilities-bridge over stdio, with four real
// upstream servers behind it: server-everything, server-filesystem (on FILES_DIR), server-memory
// and mcp-server-time. Usage: node ts_bridge.mjs CONFIG FILES_DIR BRIDGE [ARGS...]
// In aql-single mode it introspects, calls operations of every upstream and checks their own
// data in the answers; destructive ones go through the confirmation gate; arguments that break
// an upstream's schema are refused before forwarding. In native mode the upstream tools are
// listed as they are, namespaced: compared with what each upstream lists itself.
// Prints PASS/FAIL per check; exits 1 if any check failed.
import { readFileSync, existsSync } from "node:fs";
import { isDeepStrictEqual } from "node:util";
import { Client } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";

const [configPath, filesDir, bridge, ...bridgeArgs] = process.argv.slice(2);
const config = JSON.parse(readFileSync(configPath, "utf8"));
let failed = 0;
const check = (name, ok, detail) => {
  if (ok) console.log(`PASS ts bridge ${name}`);
  else {
    failed += 1;
    console.log(`FAIL ts bridge ${name}: ${detail}`);
  }
};
const attempt = async (name, body) => {
  try {
    await body();
  } catch (e) {
    check(name, false, e?.stack ?? String(e));
  }
};
const connect = async (command, args, env) => {
  const client = new Client({ name: "abilities-interop-bridge", version: "1.0.0" });
  await client.connect(new StdioClientTransport({ command, args, env: { ...process.env, ...env }, stderr: "ignore" }));
  return client;
};

await attempt("aql-single", async () => {
  const client = await connect(bridge, [...bridgeArgs, "--config", configPath, "--mode", "aql-single"]);
  const aql = async (operation, params) => {
    const r = await client.callTool({ name: "mcp_aql", arguments: params ? { operation, params } : { operation } });
    return JSON.parse(r.content[0].text);
  };
  // Confirm a gated operation with the token its first answer carries.
  const confirmed = async (name, operation, params) => {
    const gate = await aql(operation, params);
    check(`${name} asks for confirmation`, !gate.success && gate.error.code === "CONFIRMATION_REQUIRED", JSON.stringify(gate));
    return aql(operation, { ...params, _confirmation: gate.confirmation?.token });
  };
  const { tools } = await client.listTools();
  check("tools/list is one tool", tools.length === 1 && tools[0].name === "mcp_aql", JSON.stringify(tools.map((t) => t.name)));
  const list = await aql("introspect", { query: "operations" });
  const names = list.data.operations.map((o) => o.name);
  for (const op of ["everything_echo", "filesystem_write_file", "memory_create_entities", "time_convert_time", "bridge_upstreams"]) {
    check(`introspect lists ${op}`, names.includes(op), JSON.stringify(names));
  }
  const status = await aql("bridge_upstreams");
  const up = status.data?.upstreams?.filter((u) => u.status === "up").map((u) => u.server).sort();
  check("all four upstreams up", isDeepStrictEqual(up, ["everything", "filesystem", "memory", "time"]), JSON.stringify(status));
  const detail = await aql("introspect", { query: "operations", name: "filesystem_move_file" });
  check(
    "introspect filesystem_move_file",
    detail.data.operation.semantic_category === "DELETE" && detail.data.operation.parameters.map((p) => p.name).join() === "source,destination,confirmation_token",
    JSON.stringify(detail),
  );

  // everything: echo and get-sum, its own words back.
  const echo = await aql("everything_echo", { message: "through the bridge" });
  check("everything echo", echo.success && echo.data === "Echo: through the bridge", JSON.stringify(echo));
  const sum = await aql("everything_get_sum", { a: 2, b: 40 });
  check("everything get-sum", sum.success && String(sum.data).includes("42"), JSON.stringify(sum));
  // Arguments that break everything's own schema never reach it.
  const bad = await aql("everything_get_sum", { a: "two" });
  const codes = bad.error?.details?.violations?.map((v) => v.code).sort();
  check(
    "schema violations refused before forwarding",
    !bad.success && isDeepStrictEqual(codes, ["VALIDATION_INVALID_TYPE", "VALIDATION_MISSING_PARAM"]),
    JSON.stringify(bad),
  );

  // filesystem: a file written (destructive: confirmed), read back, moved (confirmed), read
  // at its new place.
  const path = `${filesDir}/bridged.txt`;
  const written = await confirmed("filesystem write_file", "filesystem_write_file", { path, content: "written through MCP-AQL" });
  check("filesystem write_file", written.success && readFileSync(path, "utf8") === "written through MCP-AQL", JSON.stringify(written));
  const read = await aql("filesystem_read_text_file", { path });
  check("filesystem read_text_file", read.success && JSON.stringify(read.data).includes("written through MCP-AQL"), JSON.stringify(read));
  const moved = await confirmed("filesystem move_file", "filesystem_move_file", { source: path, destination: `${filesDir}/moved.txt` });
  check("filesystem move_file", moved.success && existsSync(`${filesDir}/moved.txt`) && !existsSync(path), JSON.stringify(moved));

  // memory: an entity created, then found.
  const created = await aql("memory_create_entities", {
    entities: [{ name: "Ada Lovelace", entityType: "person", observations: ["wrote the first program"] }],
  });
  check("memory create_entities", created.success && JSON.stringify(created.data).includes("Ada Lovelace"), JSON.stringify(created));
  const found = await aql("memory_search_nodes", { query: "first program" });
  check("memory search_nodes", found.success && JSON.stringify(found.data).includes("Ada Lovelace"), JSON.stringify(found));
  const deleted = await confirmed("memory delete_entities", "memory_delete_entities", { entityNames: ["Ada Lovelace"] });
  check("memory delete_entities", deleted.success, JSON.stringify(deleted));
  const gone = await aql("memory_search_nodes", { query: "first program" });
  check("memory entity gone", gone.success && !JSON.stringify(gone.data).includes("Ada Lovelace"), JSON.stringify(gone));

  // time: a conversion and the current time.
  const converted = await aql("time_convert_time", { source_timezone: "UTC", time: "12:00", target_timezone: "Asia/Tokyo" });
  check(
    "time convert_time",
    converted.success && converted.data.target.timezone === "Asia/Tokyo" && converted.data.target.datetime.includes("T21:00:00"),
    JSON.stringify(converted),
  );
  const now = await aql("time_get_current_time", { timezone: "Europe/Paris" });
  check("time get_current_time", now.success && now.data.timezone === "Europe/Paris", JSON.stringify(now));
  await client.close();
});

await attempt("native", async () => {
  const client = await connect(bridge, [...bridgeArgs, "--config", configPath, "--mode", "native"]);
  const { tools } = await client.listTools();
  const byName = new Map(tools.map((t) => [t.name, t]));
  for (const [server, entry] of Object.entries(config.mcpServers)) {
    const upstream = await connect(entry.command, entry.args ?? [], entry.env ?? {});
    const own = (await upstream.listTools()).tools;
    const same = own.filter((t) => {
      const bridged = byName.get(`${server}-${t.name}`);
      return bridged && isDeepStrictEqual(bridged.inputSchema, t.inputSchema) && bridged.description === t.description;
    });
    check(
      `native lists ${server}'s ${own.length} tools as they are`,
      own.length > 0 && same.length === own.length,
      JSON.stringify(own.filter((t) => !same.includes(t)).map((t) => [t.name, byName.get(`${server}-${t.name}`)])),
    );
    await upstream.close();
  }
  const echo = await client.callTool({ name: "everything-echo", arguments: { message: "native" } });
  check("native everything-echo", echo.content?.[0]?.text === "Echo: native" && !echo.isError, JSON.stringify(echo));
  await client.close();
});

process.exit(failed ? 1 : 0);
