// A real AgriTrade server for the client's scripts and tests: the Go binary
// built from this checkout, serving on a free port over a temporary data
// directory (SQLite, local files) with its own HS256 secret. Nothing is mocked.
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve, dirname } from "node:path";
import { fileURLToPath } from "node:url";

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");

// The binary: AGRITRADE_BIN when set (CI builds it once), else built here into
// the package's .cache (go build reuses its build cache, so a rebuild only links).
export function binary() {
  if (process.env.AGRITRADE_BIN) return resolve(process.env.AGRITRADE_BIN);
  const out = join(repoRoot, "clients/typescript/.cache/agritrade");
  execFileSync("go", ["build", "-o", out, "./cmd/agritrade"], { cwd: repoRoot, stdio: "inherit" });
  return out;
}

function freePort() {
  return new Promise((ok, fail) => {
    const srv = createServer();
    srv.unref();
    srv.on("error", fail);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => ok(port));
    });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Starts `agritrade serve` and waits until /readyz answers 200.
 * @returns {Promise<{baseUrl: string, token: (claims: TokenClaims) => string, stop: () => Promise<void>, logs: () => string}>}
 */
export async function startServer({ bin = binary(), env = {}, dataDir: shared = "", secret = "" } = {}) {
  const port = await freePort();
  // Replicas of one deployment share a data directory (database and files)
  // and a secret; a shared directory is the caller's to remove.
  const dataDir = shared || mkdtempSync(join(tmpdir(), "agritrade-client-"));
  const baseUrl = `http://127.0.0.1:${port}`;
  const serverEnv = {
    ...process.env,
    AGRITRADE_DATA_DIR: dataDir,
    AGRITRADE_HTTP_ADDR: `127.0.0.1:${port}`,
    AGRITRADE_BASE_URL: baseUrl,
    AGRITRADE_AUTH_SECRET: secret || `client-test-${process.pid}-${port}`,
    AGRITRADE_LOG_LEVEL: "warn",
    ...env,
  };
  // The server must not pick up a developer's agritrade.yaml or database.
  delete serverEnv.AGRITRADE_DB_DSN;
  let out = "";
  const child = spawn(bin, ["serve"], { cwd: dataDir, env: serverEnv, stdio: ["ignore", "pipe", "pipe"] });
  child.stdout.on("data", (b) => (out += b));
  child.stderr.on("data", (b) => (out += b));
  const exited = new Promise((r) => child.once("exit", (code, sig) => r({ code, sig })));
  let done = false;
  exited.then(() => (done = true));

  const stop = async () => {
    if (!done) {
      child.kill("SIGTERM");
      const t = setTimeout(() => child.kill("SIGKILL"), 10_000);
      await exited;
      clearTimeout(t);
    }
    if (!shared) rmSync(dataDir, { recursive: true, force: true });
  };

  const deadline = Date.now() + 60_000;
  for (;;) {
    if (done) {
      await stop();
      throw new Error(`agritrade serve exited before it was ready:\n${out}`);
    }
    try {
      const r = await fetch(`${baseUrl}/readyz`);
      if (r.status === 200) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`agritrade serve was not ready after 60 s:\n${out}`);
    }
    await sleep(100);
  }

  /** @typedef {{sub: string, name?: string, org?: string, orgName?: string, orgs?: string[], roles?: string[], ttl?: string}} TokenClaims */
  const token = (c) => {
    const args = ["token", "--sub", c.sub, "--ttl", c.ttl ?? "1h"];
    if (c.name) args.push("--name", c.name);
    if (c.org) args.push("--org", c.org);
    if (c.orgName) args.push("--org-name", c.orgName);
    if (c.orgs) args.push("--orgs", c.orgs.join(","));
    if (c.roles) args.push("--roles", c.roles.join(","));
    return execFileSync(bin, args, { cwd: dataDir, env: serverEnv, encoding: "utf8" }).trim();
  };
  // kill ends the process at once (SIGKILL), as a crashed replica would.
  const kill = async () => {
    if (!done) {
      child.kill("SIGKILL");
      await exited;
    }
  };
  return { baseUrl, token, stop, kill, logs: () => out, dataDir };
}

