import { alertOutageEnded, alertOutageStarted } from "../alerts/events";
import type { Prisma, ProviderOutage } from "../db/client";
import { judgeOutageAlert, type OutageAlertEvidence, type OutageAlertVerdict, type OutageController } from "../engine/outage-alert";
import { silenceCutoff } from "../engine";
import type { BreakerReading } from "../providers/breaker";
import type { ControllerContext } from "./context";
import { judgeExit } from "./observe";

/**
 * The shell of the outage's alerts (docs/alerts.md; `judgeOutageAlert` decides): under the
 * instance's outage advisory lock, this controller's breaker is written on its row, the open
 * outage and the other controllers' rows are read as evidence, and the verdict is carried out
 * in the same transaction — the outage's row opened, paged or ended, each alert written to the
 * outbox with the outage's id as its dedupe key, and each acting verdict kept on the row with
 * its evidence. Run on every breaker change (`recordBreakerChange`, in order) and by every
 * controller's tick (`watchOutage`), so an outage whose controllers died is ended by whoever lives.
 */

const lockKey = (instanceId: string) => `alerts:outage:${instanceId}`;

/** One acting verdict as the outage's row keeps it, with what it was judged on. */
type Decision = { at: string; verdict: OutageAlertVerdict; evidence: OutageAlertEvidence };

/** This controller's breaker on its row, then the outage judged and carried out, in one transaction. */
export async function judgeOutage(ctx: ControllerContext, reading: BreakerReading): Promise<OutageAlertVerdict> {
  const { instanceId } = ctx.config;
  const self = ctx.identity.bootId;
  return ctx.db.$transaction(async (tx) => {
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext(${lockKey(instanceId)}))`;
    await tx.controllerProcess.update({
      where: { bootId: self },
      data: {
        providerUnavailableSince: date(reading.unavailableSince),
        providerLastError: reading.open ? reading.lastError : null,
        providerNextProbeAt: date(reading.nextProbeAt),
        providerConfirmedAt: date(reading.confirmedAt),
        providerAnsweredAt: date(reading.answeredAt),
      },
    });
    const [clock] = await tx.$queryRaw<Array<{ now: Date }>>`SELECT now() AS now`;
    const now = clock!.now;
    const outage = await tx.providerOutage.findFirst({ where: { instanceId, endedAt: null } });
    // Every controller that could still hold a breaker open: not silent for long (twice the window,
    // so one just gone silent is listed, as gone). Older rows are gone whatever they say.
    const rows = await tx.controllerProcess.findMany({
      where: { instanceId, OR: [{ bootId: self }, { lastSeenAt: { gt: silenceCutoff(now, 2 * ctx.config.executorTimeoutMs) } }] },
      orderBy: { bootId: "asc" },
    });
    const controllers: OutageController[] = rows.map((r) => {
      const mine = r.bootId === self;
      const record = { bootId: r.bootId, pid: r.pid, startedAt: r.startedAt.toISOString(), startTicks: r.startTicks === null ? null : Number(r.startTicks), pidSpace: r.pidSpace };
      return {
        bootId: r.bootId,
        self: mine,
        stopped: r.stoppedAt !== null,
        exited: !mine && r.stoppedAt === null && judgeExit(ctx, record).verdict.verdict === "exited",
        lastSeenAt: r.lastSeenAt.toISOString(),
        openSince: mine ? reading.unavailableSince : iso(r.providerUnavailableSince),
        confirmedAt: mine ? reading.confirmedAt : iso(r.providerConfirmedAt),
        answeredAt: mine ? reading.answeredAt : iso(r.providerAnsweredAt),
        lastError: mine ? reading.lastError : r.providerLastError,
      };
    });
    const evidence: OutageAlertEvidence = {
      now: now.toISOString(),
      minDurationMs: ctx.config.outageAlertMinMs,
      silenceMs: ctx.config.executorTimeoutMs,
      outage: outage ? { id: outage.id, startedAt: outage.startedAt.toISOString(), confirmedAt: iso(outage.confirmedAt), startedAlertAt: iso(outage.startedAlertAt) } : null,
      controllers,
    };
    const verdict = judgeOutageAlert(evidence);
    await carryOut(ctx, tx, { evidence, verdict, outage, now });
    return verdict;
  });
}

async function carryOut(
  ctx: ControllerContext,
  tx: Prisma.TransactionClient,
  { evidence, verdict, outage, now }: { evidence: OutageAlertEvidence; verdict: OutageAlertVerdict; outage: ProviderOutage | null; now: Date },
): Promise<void> {
  const { instanceId } = ctx.config;
  const decision: Decision = { at: now.toISOString(), verdict, evidence };
  const lastError = (since: string | null) => evidence.controllers.find((c) => c.openSince !== null && c.openSince === since)?.lastError ?? null;
  switch (verdict.verdict) {
    case "none":
    case "hold":
      // Nothing to page; a confirmation learnt since is kept on the row.
      if (outage && !outage.confirmedAt && verdict.confirmedAt) await tx.providerOutage.update({ where: { id: outage.id }, data: { confirmedAt: new Date(verdict.confirmedAt) } });
      return;
    case "open": {
      const startedAt = verdict.startedAt!;
      const created = await tx.providerOutage.create({
        data: {
          instanceId,
          provider: ctx.providerTarget,
          startedAt: new Date(startedAt),
          openedBy: ctx.identity.bootId,
          confirmedAt: date(verdict.confirmedAt),
          lastError: lastError(startedAt),
          startedAlertAt: verdict.sendStarted ? now : null,
          decisions: [decision] as unknown as Prisma.InputJsonValue,
        },
      });
      ctx.log.warn({ outage: created.id, since: startedAt, paged: verdict.sendStarted }, "provider outage opened");
      if (verdict.sendStarted) await alertOutageStarted(tx, { instanceId, outageId: created.id, provider: ctx.providerTarget, since: startedAt, lastError: created.lastError, controller: ctx.identity.bootId });
      return;
    }
    case "send_started": {
      const row = outage!;
      const since = row.startedAt.toISOString();
      const error = row.lastError ?? evidence.controllers.find((c) => c.openSince !== null)?.lastError ?? null;
      await tx.providerOutage.update({
        where: { id: row.id },
        data: { startedAlertAt: now, confirmedAt: row.confirmedAt ?? date(verdict.confirmedAt), lastError: error, decisions: [...decisionsOf(row), decision] as unknown as Prisma.InputJsonValue },
      });
      ctx.log.warn({ outage: row.id, since }, "provider outage paged: provider.outage_started");
      await alertOutageStarted(tx, { instanceId, outageId: row.id, provider: row.provider, since, lastError: error, controller: ctx.identity.bootId });
      return;
    }
    case "end": {
      const row = outage!;
      await tx.providerOutage.update({
        where: { id: row.id },
        data: { endedAt: now, endedBy: verdict.endedBy, endedAlertAt: verdict.sendEnded ? now : null, decisions: [...decisionsOf(row), decision] as unknown as Prisma.InputJsonValue },
      });
      ctx.log.info({ outage: row.id, since: row.startedAt.toISOString(), paged: verdict.sendEnded, orphanedBy: verdict.orphanedBy }, "provider outage over");
      if (verdict.sendEnded) {
        await alertOutageEnded(tx, { instanceId, outageId: row.id, provider: row.provider, since: row.startedAt.toISOString(), endedAt: now.toISOString(), controller: ctx.identity.bootId });
      }
      return;
    }
  }
}

/**
 * The tick's look at the outage (at most about once a second): nothing to do unless this
 * controller's breaker is open or the instance has an open outage. Before judging an outage
 * another controller opened, this controller makes sure it has seen the provider's API itself
 * since it began (a probe through its breaker, which opens it if the provider is still down).
 */
export async function watchOutage(ctx: ControllerContext): Promise<OutageAlertVerdict | null> {
  const breaker = ctx.breaker;
  if (!breaker) return null;
  let reading = breaker.reading();
  const open = await ctx.db.providerOutage.findFirst({ where: { instanceId: ctx.config.instanceId, endedAt: null }, select: { startedAt: true } });
  if (!open && !reading.open) return null;
  if (open && !reading.open) reading = await breaker.answeredSince(open.startedAt.getTime());
  return judgeOutage(ctx, reading);
}

function decisionsOf(row: ProviderOutage): unknown[] {
  return Array.isArray(row.decisions) ? row.decisions : [];
}

function date(v: string | null): Date | null {
  return v === null ? null : new Date(v);
}

function iso(v: Date | null): string | null {
  return v === null ? null : v.toISOString();
}
