import crypto from "node:crypto";
import { z } from "zod";
import type { Actor } from "../audit/write";
import type { Db, Run } from "../db/client";
import { env } from "../env";
import { AppError } from "../errors";
import { inScope, type CompanyScope } from "../shared/roles";
import { activeRunConflict, createRun, submitRunInScope, submitRunInput } from "./submit";

/**
 * An idempotent submit (docs/api.md, as Stripe's Idempotency-Key and Temporal's workflow id): a
 * company's key names one run for RUNWARDEN_API_IDEMPOTENCY_HOURS. The same key with the same
 * input answers that run again (`replayed`); with another input, a CONFLICT that says so; two
 * submits with one key at once make one run — the key's row and the run are written in one
 * transaction, and the second insert of the key waits on the first and then finds it. Without a
 * key, the input's `externalId` is the key; without either, a plain submit.
 */
export const idempotencyKeySchema = z
  .string()
  .min(1, "an Idempotency-Key is empty")
  .max(255, "an Idempotency-Key is over 255 characters")
  .regex(/^[\x21-\x7e]+$/, "an Idempotency-Key is printable ASCII without spaces");

/** The input as hashed: its parsed form in a fixed key order, so a reordered body is the same body. */
function bodyHash(input: z.infer<typeof submitRunInput>): string {
  const sorted = Object.fromEntries(Object.entries(input).sort(([a], [b]) => a.localeCompare(b)));
  return crypto.createHash("sha256").update(JSON.stringify(sorted)).digest("hex");
}

export async function submitRunOnce(
  db: Db,
  instanceId: string,
  raw: z.input<typeof submitRunInput>,
  actor: Actor,
  scope: CompanyScope,
  idempotencyKey: string | null,
  options: { keepHours?: number } = {},
): Promise<{ run: Run; replayed: boolean }> {
  const input = submitRunInput.parse(raw);
  const key = idempotencyKey !== null ? idempotencyKeySchema.parse(idempotencyKey) : input.externalId !== undefined ? `external:${input.externalId}` : null;
  // Without a key, a plain submit; out of scope, refused (and audited) there before any key is looked at: a key says nothing about another company's runs.
  if (key === null || !inScope(scope, input.companyId)) return { run: await submitRunInScope(db, instanceId, input, actor, scope), replayed: false };
  const hash = bodyHash(input);
  const hours = options.keepHours ?? env.RUNWARDEN_API_IDEMPOTENCY_HOURS;
  const runId = crypto.randomUUID();
  let created: Run | null;
  try {
    created = await db.$transaction(async (tx) => {
      // A key whose time is up is taken over; a live one is left alone (no row returned).
      const taken = await tx.$queryRaw<{ run_id: string }[]>`
        INSERT INTO run_submissions (company_id, key, body_hash, run_id, submitter, expires_at)
        VALUES (${input.companyId}, ${key}, ${hash}, ${runId}::uuid, ${actor.id}, now() + make_interval(hours => ${hours}::int))
        ON CONFLICT (company_id, key) DO UPDATE SET body_hash = EXCLUDED.body_hash, run_id = EXCLUDED.run_id, submitter = EXCLUDED.submitter, created_at = now(), expires_at = EXCLUDED.expires_at
        WHERE run_submissions.expires_at <= now()
        RETURNING run_id`;
      if (taken.length === 0) return null;
      return createRun(tx, instanceId, input, actor, { id: runId });
    });
  } catch (err) {
    throw await activeRunConflict(db, err, input, actor);
  }
  if (created) return { run: created, replayed: false };
  const kept = await db.runSubmission.findUnique({ where: { companyId_key: { companyId: input.companyId, key } } });
  if (!kept) throw new AppError("CONFLICT", `the Idempotency-Key ${key} changed while it was read; submit again`);
  if (kept.bodyHash !== hash) {
    throw new AppError("CONFLICT", `the Idempotency-Key ${key} was used with a different request body (run ${kept.runId}); use a new key for a new run`, { runId: kept.runId });
  }
  const run = await db.run.findUnique({ where: { id: kept.runId } });
  if (!run) throw new AppError("CONFLICT", `the Idempotency-Key ${key} names run ${kept.runId}, which no longer exists; use a new key`);
  return { run, replayed: true };
}
