/** `npm run db:migrate` — applies pending migrations (npm start does this on its own). */
import { openDatabase } from "../server/db/embedded";
import { migrate } from "../server/db/migrate";
import { describeUrl } from "../server/db/url";
import { env } from "../server/env";

const say = (line: string) => process.stdout.write(`runwarden: ${line}\n`);

try {
  const db = await openDatabase({ env, log: say });
  const result = await migrate(db.url, { log: say });
  say(`${describeUrl(db.url)}: ${result.applied.length} applied, ${result.alreadyApplied} already applied`);
  await db.stop();
  process.exit(0);
} catch (err) {
  process.stderr.write(`runwarden: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
}
