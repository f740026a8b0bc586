/**
 * A process that takes a row lock inside a transaction and then does nothing, for the test
 * that SIGSTOPs it there: `tsx stalled-transaction-child.ts URL INSTANCE_ID IDLE_MS` (0: no
 * idle-in-transaction timeout). Prints "locked" once the lock is held.
 */
import { createDb } from "../db/client";

const [url, instanceId, idleMs] = process.argv.slice(2);
if (!url || !instanceId || idleMs === undefined) throw new Error("usage: stalled-transaction-child URL INSTANCE_ID IDLE_MS");
const db = createDb(url, { max: 1, ...(Number(idleMs) > 0 ? { idleInTransactionTimeoutMs: Number(idleMs) } : {}) });
await db
  .$transaction(
    async (tx) => {
      await tx.$executeRaw`UPDATE instances SET name = 'held' WHERE id = ${instanceId}`;
      process.stdout.write("locked\n");
      await new Promise(() => {}); // held until the process is stopped or killed
    },
    { timeout: 600_000 },
  )
  .catch((err: unknown) => process.stdout.write(`transaction ended: ${err instanceof Error ? err.message : String(err)}\n`));
