// The `site` example's metrics and live view, with real tools: the TypeScript SDK v2 makes a
// scripted load (successful calls, refused calls, a tool that does not exist); the exposition
// counts them, a real Prometheus scraping the site reports the same counts through its query
// API, and the live view, loaded in headless Chromium (Debian's, driven by puppeteer-core),
// shows them without a console error. Its screenshot is written to SCREENSHOT.
// Usage: node observe.mjs SITE_BASE PROMETHEUS_URL SCREENSHOT
// Prints PASS/FAIL per check; exits 1 if any check failed.
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import puppeteer from "puppeteer-core";

const [base, prometheus, screenshot] = process.argv.slice(2);
const ABILITY = "my-plugin/count-posts";
const OK_CALLS = 7;
const BAD_CALLS = 3;
let failed = 0;
const check = (name, ok, detail) => {
  if (ok) console.log(`PASS observe ${name}`);
  else {
    failed += 1;
    console.log(`FAIL observe ${name}: ${detail}`);
  }
};
const attempt = async (name, body) => {
  try {
    await body();
  } catch (e) {
    check(name, false, e?.stack ?? String(e));
  }
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// One sample of the text format: the value of NAME with exactly LABELS, or undefined.
const sample = (text, name, labels) => {
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split("\n")) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)\{(.*)\} (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = m[2].split(/,(?=[a-zA-Z_]+=")/);
    if (have.length === want.length && want.every((w) => have.includes(w))) return Number(m[3]);
  }
  return undefined;
};

await attempt("load", async () => {
  const client = new Client({ name: "abilities-interop-observe", version: "1.0.0" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } });
  await client.connect(new StreamableHTTPClientTransport(new URL(base + "/mcp")));
  for (let i = 0; i < OK_CALLS; i++) {
    const r = await client.callTool({ name: "my-plugin-count-posts", arguments: { input: "post" } });
    if (r.isError) throw new Error(JSON.stringify(r));
  }
  for (let i = 0; i < BAD_CALLS; i++) {
    const r = await client.callTool({ name: "my-plugin-count-posts", arguments: { input: "nope" } });
    if (!r.isError) throw new Error("a bad post type was accepted: " + JSON.stringify(r));
  }
  // A tool that does not exist is refused, and its name never becomes a label.
  let refused = false;
  try {
    const r = await client.callTool({ name: "no-such-tool-4711", arguments: {} });
    refused = r.isError === true;
  } catch {
    refused = true;
  }
  check("an unknown tool is refused", refused, "it was answered");
  await client.close();
});

await attempt("exposition", async () => {
  const response = await fetch(base + "/metrics");
  check("GET /metrics is 200, text format 0.0.4", response.status === 200 && response.headers.get("content-type").startsWith("text/plain; version=0.0.4"), `${response.status} ${response.headers.get("content-type")}`);
  const text = await response.text();
  const ok = sample(text, "abilities_calls_total", { ability: ABILITY, surface: "native", outcome: "OK" });
  const bad = sample(text, "abilities_calls_total", { ability: ABILITY, surface: "native", outcome: "VALIDATION_INVALID_VALUE" });
  check("the exposition counts the successful calls", ok === OK_CALLS, `${ok}`);
  check("the exposition counts the refused calls by code", bad === BAD_CALLS, `${bad}`);
  const count = sample(text, "abilities_call_duration_seconds_count", { ability: ABILITY });
  check("the latency histogram holds every call", count === OK_CALLS + BAD_CALLS, `${count}`);
  check("an unknown tool's name is no label", !text.includes("no-such-tool-4711"), "it is in the exposition");
});

await attempt("prometheus", async () => {
  const query = async (q) => {
    const r = await fetch(`${prometheus}/api/v1/query?query=${encodeURIComponent(q)}`);
    const body = await r.json();
    if (body.status !== "success") throw new Error(JSON.stringify(body));
    return body.data.result;
  };
  // Scraped every second: wait for a scrape after the load (at most 30 s).
  let ok, bad, up;
  for (let i = 0; i < 60; i++) {
    try {
      ok = (await query(`sum(abilities_calls_total{ability="${ABILITY}",outcome="OK"})`))[0]?.value?.[1];
      bad = (await query(`sum(abilities_calls_total{ability="${ABILITY}",outcome!="OK"})`))[0]?.value?.[1];
      up = (await query(`up{job="site"}`))[0]?.value?.[1];
    } catch {
      // Prometheus is still starting.
    }
    if (ok === String(OK_CALLS) && bad === String(BAD_CALLS) && up === "1") break;
    await sleep(500);
  }
  check("prometheus: the site is up", up === "1", `${up}`);
  check("prometheus: the call count", ok === String(OK_CALLS), `${ok}`);
  check("prometheus: the error count", bad === String(BAD_CALLS), `${bad}`);
  const p = await query(`histogram_quantile(0.5, sum by (le) (abilities_call_duration_seconds_bucket{ability="${ABILITY}"}))`);
  const median = Number(p[0]?.value?.[1]);
  check("prometheus: a median latency from the histogram", median > 0 && median < 10, `${median}`);
});

await attempt("live view", async () => {
  const browser = await puppeteer.launch({
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
  });
  try {
    const page = await browser.newPage();
    await page.setViewport({ width: 1200, height: 800 });
    const errors = [];
    page.on("console", (m) => {
      if (m.type() === "error") errors.push(m.text());
    });
    page.on("pageerror", (e) => errors.push(e.message));
    page.on("requestfailed", (r) => errors.push(`${r.url()}: ${r.failure()?.errorText}`));
    const response = await page.goto(base + "/dashboard", { waitUntil: "networkidle0" });
    check("the live view is served", response.status() === 200, `${response.status()}`);
    await page.waitForFunction(
      (ability, calls) => {
        const row = document.querySelector(`#abilities tr[data-ability="${ability}"]`);
        return document.body.dataset.loaded === "true" && row?.querySelector(".calls")?.textContent === String(calls);
      },
      { timeout: 15000 },
      ABILITY,
      OK_CALLS + BAD_CALLS,
    );
    const shown = await page.evaluate((ability) => {
      const row = document.querySelector(`#abilities tr[data-ability="${ability}"]`);
      return {
        calls: row.querySelector(".calls").textContent,
        errors: row.querySelector(".errors").textContent,
        codes: row.lastElementChild.textContent,
        total: document.getElementById("calls-total").textContent,
        slowest: document.querySelector("#slowest tr[data-ability]")?.dataset.ability,
      };
    }, ABILITY);
    check("the live view shows the calls", shown.calls === String(OK_CALLS + BAD_CALLS), JSON.stringify(shown));
    check("the live view shows the errors", shown.errors === String(BAD_CALLS) && shown.codes.includes(`VALIDATION_INVALID_VALUE ${BAD_CALLS}`), JSON.stringify(shown));
    check("the live view lists the slowest abilities", shown.slowest === ABILITY, JSON.stringify(shown));
    mkdirSync(dirname(screenshot), { recursive: true });
    await page.screenshot({ path: screenshot, fullPage: true });
    console.log(`screenshot: ${screenshot}`);
    check("the live view logs no console error", errors.length === 0, JSON.stringify(errors));
  } finally {
    await browser.close();
  }
});

if (failed > 0) {
  console.log(`observe: ${failed} check(s) failed`);
  process.exit(1);
}
