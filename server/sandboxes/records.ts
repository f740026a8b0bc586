import type { Db, EnvironmentLease, RunStatus, SandboxCreationIntent } from "../db/client";
import { isUuid } from "../lib/ids";
import { LIVE_RUN_STATUSES } from "../engine";
import { AppError } from "../errors";
import { ProviderError } from "../providers/errors";
import { instanceScope, LABEL_KEYS } from "../providers/labels";
import type { SandboxView } from "../providers/types";
import type { CompanyScope } from "../shared/roles";
import type { Observer } from "../services/observer";

/** What the orphans page reads about a sandbox of this instance: the provider's view and Runwarden's records. */

export const LIVE = new Set<RunStatus>(LIVE_RUN_STATUSES);

type RunRef = { id: string; status: RunStatus; finishedAt: Date | null };
type LeaseRef = EnvironmentLease & { run: RunRef | null };

export interface SandboxRecords {
  intent: SandboxCreationIntent | null;
  leases: LeaseRef[];
  /** The run it was made for: its latest lease's, else its intent's, else its run label's. */
  run: RunRef | null;
  /** The company label names a company this instance has records for. */
  companyKnown: boolean;
}

/** Reads the records behind a set of sandboxes in a few queries. */
export async function loadRecords(db: Db, instanceId: string, sandboxes: SandboxView[]): Promise<Map<string, SandboxRecords>> {
  const ids = sandboxes.map((s) => s.id);
  const names = sandboxes.map((s) => s.name);
  const runSelect = { id: true, status: true, finishedAt: true } as const;
  const [leases, intents] = await Promise.all([
    ids.length
      ? db.environmentLease.findMany({ where: { OR: [{ providerLeaseId: { in: ids } }, { sandboxName: { in: names } }] }, include: { run: { select: runSelect } }, orderBy: { createdAt: "asc" } })
      : [],
    names.length ? db.sandboxCreationIntent.findMany({ where: { creationName: { in: names } } }) : [],
  ]);
  const intentByName = new Map(intents.map((i) => [i.creationName, i]));
  const labelRunIds = sandboxes.map((s) => s.labels[LABEL_KEYS.run]).filter((id): id is string => !!id && isUuid(id));
  const intentRunIds = intents.map((i) => i.runId).filter(isUuid);
  const runIds = [...new Set([...labelRunIds, ...intentRunIds])];
  const runs = runIds.length ? await db.run.findMany({ where: { id: { in: runIds } }, select: runSelect }) : [];
  const runById = new Map(runs.map((r) => [r.id, r]));

  const companies = [...new Set(sandboxes.map((s) => s.labels[LABEL_KEYS.company]).filter((c): c is string => !!c))];
  // One probe per company for any record of this instance (three GROUP BYs before; docs/decisions/0003-cost-at-scale.md).
  const known = new Set(
    companies.length
      ? (
          await db.$queryRaw<{ c: string }[]>`
            SELECT c FROM unnest(${companies}::text[]) AS c
            WHERE EXISTS (SELECT 1 FROM runs WHERE company_id = c AND instance_id = ${instanceId})
               OR EXISTS (SELECT 1 FROM sandbox_creation_intents WHERE company_id = c AND instance_id = ${instanceId})
               OR EXISTS (SELECT 1 FROM environment_leases WHERE company_id = c AND instance_id = ${instanceId})`
        ).map((r) => r.c)
      : [],
  );

  // A lease names its sandbox by id; one that never learnt the id, by its exact name.
  const byId = new Map<string, typeof leases>();
  const byName = new Map<string, typeof leases>();
  for (const l of leases) {
    const key = l.providerLeaseId ?? l.sandboxName;
    if (!key) continue;
    const map = l.providerLeaseId ? byId : byName;
    map.set(key, [...(map.get(key) ?? []), l]);
  }

  const out = new Map<string, SandboxRecords>();
  for (const s of sandboxes) {
    const mine = [...(byId.get(s.id) ?? []), ...(byName.get(s.name) ?? [])].sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime());
    const intent = intentByName.get(s.name) ?? null;
    const latestLeaseRun = [...mine].reverse().find((l) => l.run)?.run ?? null;
    const labelRun = s.labels[LABEL_KEYS.run];
    const run = latestLeaseRun ?? (intent ? runById.get(intent.runId) : undefined) ?? (labelRun ? runById.get(labelRun) : undefined) ?? null;
    const company = s.labels[LABEL_KEYS.company];
    out.set(s.id, { intent, leases: mine, run, companyKnown: !!company && known.has(company) });
  }
  return out;
}

/**
 * This instance's sandboxes, as the provider lists them by the instance label — and, for a
 * person who sees only some companies, by each of their company labels: nothing else is
 * even fetched. One provider page at a time (a pass at 10 k sandboxes used to hold them
 * all at once), the destroyed and the destroying left out.
 */
export async function* ownSandboxPages(observer: Observer, scope: CompanyScope, instanceId: string, now: Date): AsyncGenerator<SandboxView[], void, undefined> {
  const scopes = scope.all ? [instanceScope(instanceId)] : scope.companies.map((c) => instanceScope(instanceId, c));
  try {
    for (const labels of scopes) {
      for await (const page of observer.listPagesByLabels(labels, { now })) {
        const live = page.filter((s) => s.state !== "destroyed" && s.state !== "destroying");
        if (live.length) yield live;
      }
    }
  } catch (err) {
    if (ProviderError.is(err)) throw new AppError("PROVIDER_ERROR", `the provider could not list this instance's sandboxes: ${err.message}`);
    throw err;
  }
}
