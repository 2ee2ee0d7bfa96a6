// Lints the OpenAPI documents with Spectral (.spectral.yaml at the repository
// root: spectral:oas plus the project's strictness rules): each module's file
// and the merged document a real server serves. Any warning fails.
import { execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { repoRoot, startServer } from "./server.mjs";

const server = await startServer();
const dir = mkdtempSync(join(tmpdir(), "agritrade-spectral-"));
try {
  const r = await fetch(`${server.baseUrl}/openapi.json`);
  if (r.status !== 200) throw new Error(`GET /openapi.json: ${r.status}`);
  const merged = join(dir, "openapi.json");
  writeFileSync(merged, await r.text());
  const docs = [
    "platform/app/openapi.yaml",
    "system/openapi.yaml",
    "logistics/openapi.yaml",
    "livestock/openapi.yaml",
  ].map((p) => join(repoRoot, p));
  execFileSync(
    "npx",
    ["--no-install", "spectral", "lint", "--ruleset", join(repoRoot, ".spectral.yaml"), "--fail-severity", "warn", ...docs, merged],
    { stdio: "inherit" },
  );
} catch (e) {
  process.exitCode = 1;
  if (!("status" in e)) console.error(e);
} finally {
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
}
