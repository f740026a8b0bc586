import { z } from "zod";

/**
 * The one id pattern: a UUID in PostgreSQL's text form (any version, either case). Stored
 * texts that may hold a run id (sandbox labels, an intent's run id, a search box) are tested
 * with it before they are used as a `uuid` column value, which would otherwise throw.
 */
export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(text: string): boolean {
  return UUID_PATTERN.test(text);
}

/** An id a person or client sends (tRPC and CLI inputs): zod's RFC 9562 UUID. */
export const uuidSchema = z.uuid();
