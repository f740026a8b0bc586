import crypto from "node:crypto";
import type { Db } from "../db/client";

/**
 * A token's own rate limit (docs/api.md): `limit` requests a minute, counted in the database
 * (the `rate_limits` table the sign-in limiter uses, key `api:<token id>`), so every dashboard
 * process shares one count, on the database's clock. A window opens at its first request and
 * lasts `windowMs`. Answers how long to wait (ms) when the request is over the limit, else 0.
 */
export async function takeApiRequest(db: Db, tokenId: string, limit: number, windowMs = 60_000): Promise<number> {
  const rows = await db.$queryRaw<{ count: number; opened: bigint; now: bigint }[]>`
    WITH t AS (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS now)
    INSERT INTO rate_limits (id, key, count, last_request)
    SELECT ${crypto.randomUUID()}, ${`api:${tokenId}`}, 1, t.now FROM t
    ON CONFLICT (key) DO UPDATE SET
      count = CASE WHEN rate_limits.last_request <= EXCLUDED.last_request - ${windowMs}::bigint THEN 1 ELSE rate_limits.count + 1 END,
      last_request = CASE WHEN rate_limits.last_request <= EXCLUDED.last_request - ${windowMs}::bigint THEN EXCLUDED.last_request ELSE rate_limits.last_request END
    RETURNING count, last_request AS opened, (SELECT now FROM t) AS now`;
  const row = rows[0];
  if (!row || row.count <= limit) return 0;
  return Math.max(1, Number(row.opened) + windowMs - Number(row.now));
}
