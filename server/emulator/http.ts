import type http from "node:http";
import type { z } from "zod";

/** The emulator's HTTP plumbing, shared by the sandbox, toolbox and admin APIs. */

const MAX_BODY = 64 * 1024 * 1024;

/** `code` is sent only by the toolbox; Daytona's REST API errors carry none (docs/daytona.md, "Errors and rate limits"). */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** Extra answer headers (a 429's Retry-After and rate-limit headers). */
    readonly headers: Record<string, string> = {},
    /** An HTML page instead of JSON (what a proxy answers with a 502). */
    readonly html: string | null = null,
  ) {
    super(message);
  }
}

/** A path segment, percent-decoded; malformed encoding (`%ff`, `%E0%A4%A`) is the client's error. */
export function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new HttpError(400, "bad_request", `malformed percent-encoding in path segment ${JSON.stringify(segment)}`);
  }
}

export function authorize(req: http.IncomingMessage, keys: Set<string>) {
  const header = req.headers.authorization ?? "";
  const match = /^Bearer\s+(.+)$/i.exec(header);
  if (!match || !keys.has(match[1]?.trim() ?? "")) {
    throw new HttpError(401, "unauthorized", match ? "Invalid API key" : "Missing Authorization: Bearer <API key>");
  }
}

export async function readJson<T>(req: http.IncomingMessage, schema: z.ZodType<T>): Promise<T> {
  const text = (await readBody(req)).toString("utf8").trim();
  let value: unknown = {};
  if (text) {
    try {
      value = JSON.parse(text);
    } catch {
      throw new HttpError(400, "bad_request", "request body is not JSON");
    }
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new HttpError(400, "bad_request", `${issue?.path.join(".") || "body"}: ${issue?.message ?? "invalid"}`);
  }
  return parsed.data;
}

export function reply(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  // The caller may be gone (aborted create, closed connection): nothing to answer.
  if (res.headersSent || res.destroyed || res.writableEnded) return;
  const text = JSON.stringify(body);
  res.writeHead(status, { ...headers, "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

/** An HTML error page, as a proxy in front of the API answers (nginx's 502). */
export function replyHtml(res: http.ServerResponse, status: number, html: string) {
  if (res.headersSent || res.destroyed || res.writableEnded) return;
  res.writeHead(status, { "content-type": "text/html", "content-length": Buffer.byteLength(html) });
  res.end(html);
}

export function intParam(url: URL, name: string, fallback: number, min: number, max: number): number {
  const raw = url.searchParams.get(name);
  if (raw === null || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) throw new HttpError(400, "bad_request", `${name} must be an integer from ${min} to ${max}`);
  return n;
}

export async function readBody(req: http.IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY) throw new HttpError(413, "payload_too_large", "request body over 64 MiB");
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

