// /docs end to end, as a newcomer uses it: `agritrade demo` fills a fresh
// installation, the real server serves it, and headless Chromium (Debian's
// chromium, driven by puppeteer-core) opens /docs, authorises with the token
// the demo prints, and for every operation of the document opens it, clicks
// "Try it" and "Send" with what the page shows (the document's examples:
// required parameters and bodies prefilled, example files chosen for uploads)
// and expects the documented success status in the page. The examples cite
// the demo's objects (cmd/agritrade/demo_ids.go), so this fails when an
// example stops matching the demo or the server.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import puppeteer, { type Browser, type Page } from "puppeteer-core";
// @ts-expect-error: plain JavaScript helper shared with the scripts
import { binary, startServer } from "../scripts/server.mjs";

interface Server {
  baseUrl: string;
  stop: () => Promise<void>;
  logs: () => string;
}

const chromium = process.env.AGRITRADE_CHROMIUM || "/usr/bin/chromium";
// The short-link example's target is on localhost (the default base_url): the
// allow-list compares host names, so both the demo and the server use it.
const baseURL = "http://localhost:8080";

let dir = "";
let server: Server;
let browser: Browser;
let page: Page;
let token = "";

before(async () => {
  if (!existsSync(chromium)) {
    throw new Error(`${chromium} is missing: apt-get install -y chromium (or set AGRITRADE_CHROMIUM)`);
  }
  dir = mkdtempSync(join(tmpdir(), "agritrade-docs-"));
  const secret = `docs-test-${process.pid}`;
  const env: NodeJS.ProcessEnv = { ...process.env, AGRITRADE_DATA_DIR: dir, AGRITRADE_AUTH_SECRET: secret, AGRITRADE_BASE_URL: baseURL };
  delete env.AGRITRADE_DB_DSN;
  const out = execFileSync(binary(), ["demo"], { cwd: dir, env, encoding: "utf8" });
  // The first token printed is the one for /docs (the farmer with the admin role).
  const m = /with the admin role\n\s+(\S+)/.exec(out);
  assert.ok(m && m[1], `agritrade demo printed no /docs token:\n${out}`);
  token = m[1];
  server = (await startServer({ dataDir: dir, secret, env: { AGRITRADE_BASE_URL: baseURL } })) as Server;
  browser = await puppeteer.launch({
    executablePath: chromium,
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      `--user-data-dir=${mkdtempSync(join(dir, "chromium-"))}`,
    ],
  });
  page = await browser.newPage();
});

after(async () => {
  await browser?.close();
  await server?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

interface Operation {
  domId: string;
  label: string;
  success: string[];
}

test("docs: every operation's Try it works with its shown example against the demo sample", { timeout: 600_000 }, async () => {
  const problems: string[] = [];
  page.on("pageerror", (e) => problems.push(`page error: ${e}`));
  page.on("console", (m) => {
    if (m.type() === "error" && !/Failed to load resource/.test(m.text())) problems.push(`console: ${m.text()}`);
  });
  await page.goto(`${server.baseUrl}/docs`, { waitUntil: "networkidle0" });
  await page.waitForSelector("details.op");

  // Authorise as a newcomer does: paste the token, Save.
  await page.type("#auth-token", token);
  await page.click("#auth button[type=submit]");

  // The operations as the page lists them, with the success statuses their
  // documents give (2xx, and 3xx for a redirect).
  const spec = await (await fetch(`${server.baseUrl}/openapi.json`)).json();
  const ops: Operation[] = await page.$$eval("details.op", (cards) =>
    cards.map((c) => ({ domId: c.id, label: (c.querySelector("summary")?.textContent || "").replace(/\s+/g, " ").trim(), success: [] })),
  );
  const byDomId = new Map<string, string[]>();
  for (const [path, item] of Object.entries<Record<string, { operationId?: string; responses?: Record<string, unknown> }>>(spec.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (!op || typeof op !== "object" || !("responses" in op)) continue;
      const id = op.operationId || `${method} ${path}`;
      const codes = Object.keys(op.responses || {}).filter((c) => /^[23]/.test(c));
      byDomId.set("op-" + id.replace(/[^A-Za-z0-9_-]+/g, "-").replace(/^-+|-+$/g, ""), codes);
    }
  }
  for (const o of ops) o.success = byDomId.get(o.domId) ?? [];
  assert.ok(ops.length >= 70, `the page lists ${ops.length} operations`);

  const failed: string[] = [];
  let passed = 0;
  for (const o of ops) {
    const sel = `#${o.domId}`;
    await page.$eval(sel, (c) => ((c as HTMLDetailsElement).open = true));
    await page.waitForSelector(`${sel} .try-head button`);
    await page.click(`${sel} .try-head button`);
    await page.click(`${sel} .try-form button[type=submit]`);
    // The answer is in when the Send button is back (an event stream is read for a few seconds).
    await page.waitForFunction(
      (s) => {
        const b = document.querySelector(`${s} .try-form button[type=submit]`) as HTMLButtonElement | null;
        const note = document.querySelector(`${s} .try-note`);
        return (b && !b.disabled && document.querySelector(`${s} .try-result .status`)) || (note && note.classList.contains("error"));
      },
      { timeout: 30_000 },
      sel,
    );
    const status = await page.$eval(sel, (c) => {
      const s = c.querySelector(".try-result .status");
      const note = c.querySelector(".try-note");
      return s ? s.textContent || "" : `not sent: ${note ? note.textContent : ""}`;
    });
    const code = status.split(" ")[0] ?? "";
    const ok = /^2\d\d$/.test(code) ? o.success.includes(code) || o.success.length === 0 : code === "3xx" && o.success.some((c) => c.startsWith("3"));
    if (ok) {
      passed++;
    } else {
      const body = await page.$eval(sel, (c) => (c.querySelector(".try-result")?.textContent || "").slice(0, 400));
      failed.push(`${o.label}: ${status} (documented: ${o.success.join(", ")}) ${body}`);
    }
  }
  console.log(`docs: ${passed} of ${ops.length} operations answered their documented success from Try it`);
  assert.deepEqual(failed, [], `operations whose example did not succeed:\n${failed.join("\n")}\n\nserver log:\n${server.logs().slice(-4000)}`);
  assert.deepEqual(problems, []);
});
