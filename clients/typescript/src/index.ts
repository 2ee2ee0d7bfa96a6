// The AgriTrade API client: openapi-fetch over the types that openapi-typescript
// generates from the merged OpenAPI document (src/schema.d.ts). Every path,
// parameter, body and answer is typed from the document; this file only adds
// the bearer token and the multipart encoding.
import createClient, { type Client, type Middleware } from "openapi-fetch";
import type { components, operations, paths } from "./schema.js";

export type { components, operations, paths };
export type Schemas = components["schemas"];
export type AgriTradeClient = Client<paths>;

export interface ClientOptions {
  /** Server root, e.g. `http://localhost:8080` (the document's paths are absolute). */
  baseUrl: string;
  /** Bearer token, or a function answering the current one (refreshing tokens). */
  token?: string | (() => string | undefined | Promise<string | undefined>);
  /** Another fetch (tests, proxies). */
  fetch?: typeof globalThis.fetch;
}

export function createAgriTradeClient(opts: ClientOptions): AgriTradeClient {
  const client = createClient<paths>({ baseUrl: opts.baseUrl, fetch: opts.fetch });
  if (opts.token !== undefined) {
    const source = opts.token;
    const auth: Middleware = {
      async onRequest({ request }) {
        const t = typeof source === "function" ? await source() : source;
        if (t) request.headers.set("Authorization", `Bearer ${t}`);
        return request;
      },
    };
    client.use(auth);
  }
  return client;
}

type FieldValue = string | number | boolean | Blob | readonly (string | number)[] | null | undefined;

/**
 * The `bodySerializer` of multipart operations (file upload, imports): the
 * typed body as FormData. Text fields go first and Blob parts last, so the
 * request also suits servers that stream the file part as it arrives; arrays
 * become repeated fields (`organisations`).
 */
export function multipart<T extends object>(body: T): FormData {
  const form = new FormData();
  const files: [string, Blob][] = [];
  for (const [name, value] of Object.entries(body as Record<string, FieldValue>)) {
    if (value === undefined || value === null) continue;
    if (value instanceof Blob) files.push([name, value]);
    else if (Array.isArray(value)) for (const v of value) form.append(name, String(v));
    else form.append(name, String(value));
  }
  for (const [name, blob] of files) form.append(name, blob, blob instanceof File ? blob.name : name);
  return form;
}

/** The error body of every 4xx/5xx answer (API.md, Conventions). */
export type ApiError = Schemas["Error"];
