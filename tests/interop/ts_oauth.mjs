// The TypeScript SDK v2 client against the `site` example run as an OAuth resource server
// (`--issuer/--audience/--jwks`): the RFC 9728 metadata, a bearer token minted here with the
// test key (tests/fixtures/jwt), refusals without a token, with an expired one and with
// one lacking a tool's scope (403 insufficient_scope).
// Usage: node ts_oauth.mjs URL KEY.pem ISSUER AUDIENCE
// Prints PASS/FAIL per check; exits 1 if any check failed.
import { createSign } from "node:crypto";
import { readFileSync } from "node:fs";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

const [url, keyPath, issuer, audience] = process.argv.slice(2);
const key = readFileSync(keyPath);
let failed = 0;
const check = (name, ok, detail) => {
  if (ok) console.log(`PASS oauth ${name}`);
  else {
    failed += 1;
    console.log(`FAIL oauth ${name}: ${detail}`);
  }
};
const segment = (value) => Buffer.from(JSON.stringify(value)).toString("base64url");
const mint = (claims) => {
  const head = segment({ alg: "RS256", typ: "JWT", kid: "k1" });
  const body = segment(claims);
  const signature = createSign("RSA-SHA256").update(`${head}.${body}`).sign(key, "base64url");
  return `${head}.${body}.${signature}`;
};
const now = Math.floor(Date.now() / 1000);
const claims = (extra) => ({ iss: issuer, aud: audience, sub: "ts-client", exp: now + 300, iat: now, ...extra });
const connect = async (token) => {
  const client = new Client({ name: "abilities-interop-oauth", version: "1.0.0" });
  const headers = token ? { Authorization: `Bearer ${token}` } : {};
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  return client;
};
const refused = async (name, body, expected) => {
  try {
    await body();
    check(name, false, "was let in");
  } catch (e) {
    const message = e?.message ?? String(e);
    check(name, expected.some((s) => message.includes(s)), message);
  }
};

const metadataUrl = new URL("/.well-known/oauth-protected-resource/mcp", url);
const metadata = await (await fetch(metadataUrl)).json();
check(
  "protected resource metadata",
  metadata.resource === audience && metadata.authorization_servers?.[0] === issuer,
  JSON.stringify(metadata),
);
const bare = await fetch(url, {
  method: "POST",
  headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
  body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
});
// The challenge names the metadata at the resource's canonical URL (the audience).
const canonical = new URL("/.well-known/oauth-protected-resource/mcp", audience);
check(
  "401 names the metadata",
  bare.status === 401 && (bare.headers.get("www-authenticate") ?? "") === `Bearer resource_metadata="${canonical}"`,
  `${bare.status} ${bare.headers.get("www-authenticate")}`,
);

try {
  const client = await connect(mint(claims({ scope: "posts:write posts:delete" })));
  const { tools } = await client.listTools();
  check("tools/list with a token", tools.some((t) => t.name === "wp_delete_post"), JSON.stringify(tools.map((t) => t.name)));
  // A destructive tool waits for the user: this client cannot be asked, so the refusal
  // offers a token, which the retry carries.
  const asked = await client.callTool({ name: "wp_delete_post", arguments: { id: 987654 } });
  const gate = JSON.parse(asked.content[0].text);
  const token = gate.details?.confirmation_token;
  check("a destructive call asks for confirmation", asked.isError === true && gate.code === "CONFIRMATION_REQUIRED" && typeof token === "string", JSON.stringify(asked));
  const deleted = await client.callTool({ name: "wp_delete_post", arguments: { id: 987654, _confirmation: token } });
  const error = JSON.parse(deleted.content[0].text);
  check("a scoped call reaches the ability", deleted.isError === true && error.code === "NOT_FOUND_RESOURCE", JSON.stringify(deleted));
  await client.close();
} catch (e) {
  check("a token's session", false, e?.message ?? String(e));
}

await refused("no token", () => connect(undefined), ["401", "Unauthorized"]);
await refused("an expired token", () => connect(mint(claims({ exp: now - 600 }))), ["401", "Unauthorized"]);
await refused(
  "a token without the tool's scope",
  async () => {
    const client = await connect(mint(claims({ scope: "posts:write" })));
    try {
      await client.callTool({ name: "wp_delete_post", arguments: { id: 987654 } });
    } finally {
      await client.close();
    }
  },
  // The SDK reads the 403's `WWW-Authenticate: Bearer error="insufficient_scope", scope=...`.
  ['Insufficient scope: required "posts:delete"'],
);
process.exit(failed ? 1 : 0);
