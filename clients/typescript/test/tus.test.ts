// Resumable uploads with a real tus client (tus-js-client, as a phone app
// would use it) against two real replicas of one deployment: the same data
// directory (SQLite database and file store) and secret. The upload is cut
// mid-way, the replica that took it is killed, and the upload resumes on the
// other one; every chunk carries its SHA-256 (tus checksum extension). The
// finished file is downloaded and compared by SHA-256.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as tus from "tus-js-client";
// @ts-expect-error: plain JavaScript helper shared with the scripts
import { startServer } from "../scripts/server.mjs";

interface Server {
  baseUrl: string;
  token: (c: { sub: string; name?: string; org?: string; orgs?: string[] }) => string;
  stop: () => Promise<void>;
  kill: () => Promise<void>;
  logs: () => string;
}

const chunkSize = 256 << 10;
const content = randomBytes(6 * chunkSize + 12345);
const sha256 = (b: Uint8Array) => createHash("sha256").update(b).digest();

let dir = "";
let a: Server;
let b: Server;
let token = "";

before(async () => {
  dir = mkdtempSync(join(tmpdir(), "agritrade-tus-"));
  const secret = `tus-test-${process.pid}`;
  a = (await startServer({ dataDir: dir, secret })) as Server;
  b = (await startServer({ dataDir: dir, secret })) as Server;
  token = a.token({ sub: "U1", name: "Ann Smith", org: "O1", orgs: ["O1"] });
});

after(async () => {
  await a?.stop();
  await b?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

// options are the tus-js-client options of the app: the bearer token, the
// upload form's fields as metadata, 256 KiB chunks, and each PATCH's SHA-256.
function options(extra: Partial<tus.UploadOptions>): tus.UploadOptions {
  return {
    chunkSize,
    headers: { Authorization: `Bearer ${token}` },
    metadata: { bucket: "files", type: "weighbridge", name: "ticket-scan.bin" },
    retryDelays: [0, 500, 1000],
    storeFingerprintForResuming: false,
    onBeforeRequest: (req) => {
      if (req.getMethod() !== "PATCH") return;
      const offset = Number(req.getHeader("Upload-Offset"));
      const chunk = content.subarray(offset, Math.min(offset + chunkSize, content.length));
      req.setHeader("Upload-Checksum", `sha256 ${sha256(chunk).toString("base64")}`);
    },
    ...extra,
  };
}

async function head(url: string): Promise<Response> {
  return fetch(url, { method: "HEAD", headers: { Authorization: `Bearer ${token}`, "Tus-Resumable": "1.0.0" } });
}

describe("resumable upload with tus-js-client", () => {
  test("OPTIONS advertises the extensions", async () => {
    const r = await fetch(`${b.baseUrl}/system/v1/uploads`, { method: "OPTIONS" });
    assert.equal(r.status, 204);
    assert.equal(r.headers.get("tus-version"), "1.0.0");
    assert.equal(r.headers.get("tus-checksum-algorithm"), "sha256");
    assert.match(r.headers.get("tus-extension") ?? "", /creation.*termination.*expiration.*checksum/);
  });

  test("cut mid-way on one replica, resumed on the other, downloads with the same SHA-256", async () => {
    // 1. Replica A takes the first chunks; the app loses its connection.
    let uploadUrl = "";
    await new Promise<void>((done, fail) => {
      const up: tus.Upload = new tus.Upload(
        content,
        options({
          endpoint: `${a.baseUrl}/system/v1/uploads`,
          onError: fail,
          onSuccess: () => fail(new Error("the upload should have been cut")),
          onChunkComplete: (_size, accepted) => {
            if (accepted >= 3 * chunkSize) {
              uploadUrl = up.url ?? "";
              up.abort().then(() => done(), fail);
            }
          },
        }),
      );
      up.start();
    });
    assert.match(uploadUrl, /\/system\/v1\/uploads\/[0-9a-f-]{36}$/);
    // 2. Replica A dies.
    await a.kill();
    const path = new URL(uploadUrl).pathname;
    const onB = `${b.baseUrl}${path}`;
    const h = await head(onB);
    assert.equal(h.status, 200);
    assert.equal(Number(h.headers.get("upload-offset")), 3 * chunkSize);

    // 3. A corrupted chunk (checksum of other bytes) is refused with 460 and
    // moves nothing.
    const bad = await fetch(onB, {
      method: "PATCH",
      headers: {
        Authorization: `Bearer ${token}`,
        "Tus-Resumable": "1.0.0",
        "Content-Type": "application/offset+octet-stream",
        "Upload-Offset": String(3 * chunkSize),
        "Upload-Checksum": `sha256 ${sha256(Buffer.from("other bytes")).toString("base64")}`,
      },
      body: content.subarray(3 * chunkSize, 4 * chunkSize),
    });
    assert.equal(bad.status, 460);
    assert.equal((await bad.json()).status, "error");
    assert.equal(Number((await head(onB)).headers.get("upload-offset")), 3 * chunkSize);

    // 4. The app resumes on replica B (behind one load balancer it would be
    // the same URL); tus-js-client asks the offset and sends the rest.
    const fileId = await new Promise<string>((done, fail) => {
      const up = new tus.Upload(
        content,
        options({
          uploadUrl: onB,
          onError: fail,
          onSuccess: ({ lastResponse }) => done(lastResponse.getHeader("Upload-File-Id") ?? ""),
        }),
      );
      up.start();
    });
    assert.match(fileId, /^[0-9a-f-]{36}$/);
    assert.equal((await head(onB)).headers.get("upload-file-id"), fileId);

    // 5. The file is an ordinary file: same bytes, same SHA-256 in its record.
    const info = await fetch(`${b.baseUrl}/system/v1/files/${fileId}/info`, { headers: { Authorization: `Bearer ${token}` } });
    assert.equal(info.status, 200);
    assert.equal((await info.json()).hash, sha256(content).toString("hex"));
    const got = await fetch(`${b.baseUrl}/system/v1/files/${fileId}`, { headers: { Authorization: `Bearer ${token}` } });
    assert.equal(got.status, 200);
    assert.deepEqual(sha256(new Uint8Array(await got.arrayBuffer())), sha256(content));
  });
});
