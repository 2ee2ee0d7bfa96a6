// The main flows of an app, written as an app developer would with the
// generated client, against a real server (scripts/server.mjs: the Go binary
// over a temporary SQLite database and file directory, tokens minted by
// `agritrade token`). Each answer is checked for its status and the fields a
// client relies on; the compiler checks every path, parameter and body.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { createAgriTradeClient, multipart, type AgriTradeClient, type Schemas } from "../src/index.js";
// @ts-expect-error: plain JavaScript helper shared with the scripts
import { startServer } from "../scripts/server.mjs";

interface Server {
  baseUrl: string;
  token: (c: { sub: string; name?: string; org?: string; orgName?: string; orgs?: string[]; roles?: string[] }) => string;
  stop: () => Promise<void>;
  logs: () => string;
}

let server: Server;
// Ann organises loads for Smith Farms (O1) and sells sheep; Bob is the carrier
// (Fen Haulage, O2); Cat is a member of neither.
let ann: AgriTradeClient;
let bob: AgriTradeClient;
let cat: AgriTradeClient;
let anon: AgriTradeClient;

before(async () => {
  server = (await startServer()) as Server;
  const client = (token?: string) => createAgriTradeClient({ baseUrl: server.baseUrl, token });
  ann = client(server.token({ sub: "U1", name: "Ann Smith", org: "O1", orgName: "Smith Farms", orgs: ["O1"] }));
  bob = client(server.token({ sub: "U2", name: "Bob Carter", org: "O2", orgName: "Fen Haulage", orgs: ["O2"] }));
  cat = client(server.token({ sub: "U3", name: "Cat Jones", org: "O3", orgName: "Jones Dairy", orgs: ["O3"] }));
  anon = client();
});

after(async () => {
  await server?.stop();
});

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe("AgriTrade client against a real server", () => {
  let wheatId = 0;
  let fileId = "";
  let listingId = "";

  test("reads the settings document", async () => {
    const { data, error, response } = await ann.GET("/system/v1/settings");
    assert.equal(response.status, 200, JSON.stringify(error));
    assert.ok(data);
    assert.ok(data.countries["GB"], "GB in the settings");
    assert.equal(data.countries["GB"]?.iso ?? "GB", "GB");
    const grain = data.commodities.find((c) => c.countryISO === "GB" && c.items.some((i) => i.name === "Wheat"));
    assert.ok(grain, "GB wheat in the commodities");
    wheatId = grain.items.find((i) => i.name === "Wheat")!.id;
    assert.ok(Number.isInteger(wheatId));
    assert.ok(response.headers.get("etag"), "settings carry an ETag");
  });

  test("uploads a file (multipart) and reads its record", async () => {
    const content = "weighbridge ticket WB-5521\n";
    const { data, error, response } = await ann.POST("/system/v1/files", {
      body: {
        bucket: "files",
        type: "weighbridge",
        name: "ticket.txt",
        file: new Blob([content], { type: "text/plain" }),
      },
      bodySerializer: multipart,
    });
    assert.equal(response.status, 200, JSON.stringify(error));
    assert.ok(data);
    assert.match(data.id, uuid);
    assert.equal(data.status, "active");
    assert.equal(data.organisationId, "O1");
    assert.equal(data.info.name, "ticket.txt");
    assert.equal(data.info.hash, createHash("sha256").update(content).digest("hex"));
    assert.match(data.info.contentType, /^text\/plain/);
    fileId = data.id;

    const info = await ann.GET("/system/v1/files/{id}/info", { params: { path: { id: fileId } } });
    assert.equal(info.response.status, 200);
    assert.equal(info.data?.name, "ticket.txt");
    assert.match(info.data?.url ?? "", new RegExp(`/system/v1/files/${fileId}\\?`));
    // Files of another organisation are not found (never 403).
    const other = await cat.GET("/system/v1/files/{id}/info", { params: { path: { id: fileId } } });
    assert.equal(other.response.status, 404);
    assert.equal(other.error?.code, "not_found");
  });

  test("creates a sheep listing and finds it by search", async () => {
    const body: Schemas["ListingCreateSheep"] = {
      type: "selling",
      isDraft: false,
      categoryIds: [],
      location: {
        address: { countryISO: "GB" },
        coordinates: { lat: 52.2053, lon: 0.1218 },
      } as Schemas["Location"],
      price: { type: "fixed", pricePerUnit: { amount: 145, currency: "GBP" } },
      files: [{ id: fileId }] as Schemas["FileReference"][],
      description: "40 Texel ewes, scanned in lamb",
      tags: ["texel"],
      properties: { breedType: "texel", sexes: "ewes" },
    };
    const created = await ann.POST("/livestock/v1/listings/sheep", { body });
    assert.equal(created.response.status, 200, JSON.stringify(created.error));
    assert.equal(created.data?.status, "success");
    listingId = created.data!.id;
    assert.match(listingId, uuid);

    const got = await bob.GET("/livestock/v1/listings/{id}", { params: { path: { id: listingId } } });
    assert.equal(got.response.status, 200, JSON.stringify(got.error));
    assert.equal(got.data?.kind, "sheep");
    assert.equal(got.data?.status, "active");
    assert.equal(got.data?.organisationId, "O1");
    assert.equal(got.data?.price.pricePerUnit.amount, 145);
    assert.deepEqual(got.data?.files.map((f) => f.id), [fileId]);

    const found = await bob.GET("/livestock/v1/listings", {
      params: { query: { "f:commodityType": "sheep", latitude: 52.2, longitude: 0.12, distanceKm: 25 } },
    });
    assert.equal(found.response.status, 200, JSON.stringify(found.error));
    assert.ok(Array.isArray(found.data), "docs=true answers the listings");
    const hit = (found.data as Schemas["Listing"][]).find((l) => l.id === listingId);
    assert.ok(hit, "the new listing is found near its location");
    assert.ok(typeof hit.distanceKm === "number" && hit.distanceKm < 25);
    assert.equal(found.response.headers.get("x-total-count"), "1");

    const facets = await bob.GET("/livestock/v1/listings", { params: { query: { docs: false } } });
    assert.equal(facets.response.status, 200);
    assert.ok(facets.data && !Array.isArray(facets.data));
    assert.equal((facets.data as Schemas["ListingFacets"]).totalDocs, 1);

    // An unknown sortBy is refused; the allowed ones are typed (the enum).
    const bad = await bob.GET("/livestock/v1/listings", {
      params: { query: { sortBy: "colour" as never } },
    });
    assert.equal(bad.response.status, 400);
    assert.equal(bad.error?.code, "bad_request");
  });

  test("load: organiser creates, sends to carrier, proof of delivery", async () => {
    const load: Schemas["LoadCreate"] = {
      organiserId: "O1",
      organiserName: "Smith Farms",
      commodityId: wheatId,
      reference: "PO-1001",
      deliveryDateISO: "2026-09-01",
      weight: 29.5,
      weightNet: null,
      files: [],
      tags: ["harvest"],
      pickupPostcode: "CB1 2AB",
      dropoffPostcode: "PE1 1AA",
    };
    const created = await ann.POST("/logistics/v1/loads", { body: load });
    assert.equal(created.response.status, 200, JSON.stringify(created.error));
    const made = created.data as Schemas["Load"];
    assert.match(made.id, uuid);
    assert.equal(made.status, "upcoming");
    assert.equal(made.reference, "PO-1001");
    assert.equal(made.organiser.id, "O1");
    assert.equal(made.weight?.weight, 29.5);
    assert.equal(made.carrier ?? null, null);

    const dup = await ann.POST("/logistics/v1/loads", { body: load });
    assert.equal(dup.response.status, 409);
    assert.equal(dup.error?.code, "conflict");

    // Before the hand-off the carrier does not see the load.
    const hidden = await bob.GET("/logistics/v1/loads/{id}", { params: { path: { id: made.id } } });
    assert.equal(hidden.response.status, 404);

    const sent = await ann.POST("/logistics/v1/loads/send-to-carrier", {
      body: [{ loadId: made.id, carrierId: "O2", carrierName: "Fen Haulage" }],
    });
    assert.equal(sent.response.status, 200, JSON.stringify(sent.error));
    assert.equal(sent.data?.status, "success");

    const seen = await bob.GET("/logistics/v1/loads/{id}", { params: { path: { id: made.id } } });
    assert.equal(seen.response.status, 200, JSON.stringify(seen.error));
    assert.equal(seen.data?.carrier?.id, "O2");

    const list = await bob.GET("/logistics/v1/loads", { params: { query: { query: "PO-1001" } } });
    assert.equal(list.response.status, 200);
    assert.deepEqual((list.data as Schemas["Load"][]).map((l) => l.id), [made.id]);

    const pod = await bob.POST("/logistics/v1/loads/{id}/proof-of-delivery", {
      params: { path: { id: made.id } },
      body: { weightNet: 28.9, ticketNumber: "WB-5521", vehicleRegistration: "AB12 CDE", files: [{ id: fileId }] as Schemas["FileReference"][] },
    });
    // The carrier may record it but cannot read Ann's file: 400 on files[0].id.
    assert.equal(pod.response.status, 400, JSON.stringify(pod.error));
    assert.equal(pod.error?.validation?.[0]?.path, "files[0].id");

    const done = await ann.POST("/logistics/v1/loads/{id}/proof-of-delivery", {
      params: { path: { id: made.id } },
      body: { weightNet: 28.9, ticketNumber: "WB-5521", vehicleRegistration: "AB12 CDE", files: [{ id: fileId }] as Schemas["FileReference"][] },
    });
    assert.equal(done.response.status, 200, JSON.stringify(done.error));
    assert.equal(done.data?.status, "completed");
    assert.equal(done.data?.weightNet?.weight, 28.9);
    assert.equal(done.data?.ticketNumber, "WB-5521");

    const again = await ann.POST("/logistics/v1/loads/{id}/proof-of-delivery", {
      params: { path: { id: made.id } },
      body: { weightNet: 28.9, ticketNumber: "WB-5521", vehicleRegistration: "AB12 CDE", files: null },
    });
    assert.equal(again.response.status, 409);
  });

  test("conversation about the listing and a reply", async () => {
    const started = await bob.POST("/system/v1/conversations", {
      body: { to: "U1", message: "Are the ewes still available?", listingId, listingType: "livestock" },
    });
    assert.equal(started.response.status, 200, JSON.stringify(started.error));
    const conv = started.data!;
    assert.match(conv.conversationId, uuid);
    assert.equal(conv.listingId, listingId);
    assert.deepEqual(conv.participants.map((p) => p.id).sort(), ["U1", "U2"]);
    assert.equal(conv.messages.length, 1);

    const reply = await ann.POST("/system/v1/conversations/{id}/messages", {
      params: { path: { id: conv.conversationId } },
      body: { to: "U2", message: "Yes, come and see them on Saturday." },
    });
    assert.equal(reply.response.status, 200, JSON.stringify(reply.error));
    assert.equal(reply.data?.messages.length, 2);
    assert.equal(reply.data?.messages.at(-1)?.sentById, "U1");

    const forListing = await bob.GET("/system/v1/conversations/listing/{id}", { params: { path: { id: listingId } } });
    assert.equal(forListing.response.status, 200);
    assert.equal(forListing.data?.conversationId, conv.conversationId);

    const page = await ann.GET("/system/v1/conversations", { params: { query: { sortBy: "updatedAtUTC", sortDesc: true } } });
    assert.equal(page.response.status, 200, JSON.stringify(page.error));
    assert.equal(page.response.headers.get("x-total-count"), "1");

    const outsider = await cat.GET("/system/v1/conversations/{id}", { params: { path: { id: conv.conversationId } } });
    assert.equal(outsider.response.status, 404);
  });

  test("short link: create without a token, follow the redirect", async () => {
    const target = `${server.baseUrl}/livestock/v1/listings/${listingId}`;
    const made = await anon.POST("/system/v1/short-urls", {
      body: { template: "default", url: target, source: "app", campaign: "spring-sale" },
    });
    assert.equal(made.response.status, 200, JSON.stringify(made.error));
    assert.equal(made.data?.status, "success");
    const code = made.data!.code;
    assert.equal(made.data?.shortUrl, `${server.baseUrl}/s/${code}`);

    const same = await anon.POST("/system/v1/short-urls", {
      body: { template: "default", url: target, source: "app", campaign: "spring-sale" },
    });
    assert.equal(same.data?.code, code, "the same link answers the same code");

    const followed = await anon.GET("/s/{code}", { params: { path: { code } }, redirect: "manual" });
    assert.equal(followed.response.status, 302);
    const location = new URL(followed.response.headers.get("location") ?? "");
    assert.equal(location.pathname, `/livestock/v1/listings/${listingId}`);
    assert.equal(location.searchParams.get("utm_source"), "app");
    assert.equal(location.searchParams.get("utm_campaign"), "spring-sale");
  });

  test("errors are the typed error body", async () => {
    const r = await anon.GET("/system/v1/settings");
    assert.equal(r.response.status, 401);
    assert.equal(r.error?.status, "error");
    assert.equal(r.error?.code, "unauthorized");
    assert.match(r.response.headers.get("www-authenticate") ?? "", /^Bearer/);
  });
});
