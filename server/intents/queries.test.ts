import { describe, expect, it } from "vitest";
import type { ControllerContext } from "../controller/context";
import type { SandboxCreationIntent } from "../db/client";
import { currentProcessIdentity } from "../process/identity";
import { asIdentity } from "../engine";
import { observerOf } from "../services/observer";

const self = currentProcessIdentity();
const observer = observerOf({ identity: self } as ControllerContext);
const judgePendingIntent = (i: SandboxCreationIntent, committedLease: boolean, now: Date) => observer.judgePendingIntent(i, committedLease, now);
const NOW = new Date("2026-11-12T12:00:00.000Z");

function intent(creator: unknown, nextAttemptAt: Date): SandboxCreationIntent {
  return {
    id: "op-1",
    instanceId: "inst-a",
    companyId: "co-1",
    runId: "probe",
    creationName: "rw-create-op-1",
    labels: {},
    creatorBootId: null,
    creator: creator as SandboxCreationIntent["creator"],
    status: "pending",
    attempts: 0,
    lastInspection: null,
    lastInspectedAt: null,
    createdAt: new Date(NOW.getTime() - 60_000),
    settleDeadline: new Date(NOW.getTime() + 60_000),
    nextAttemptAt,
    resolvedAt: null,
    updatedAt: NOW,
  };
}

describe("what the sweep would do with a pending intent, before asking the provider", () => {
  const later = new Date(NOW.getTime() + 30 * 60_000);
  const alive = { bootId: self.bootId, pid: self.pid, startedAt: self.startedAt, pidSpace: self.pidSpace };

  it("waits for a live creator until nextAttemptAt, then inspects", () => {
    expect(judgePendingIntent(intent(alive, later), false, NOW)).toMatchObject({ verdict: "wait", creatorVerdict: { verdict: "alive", reason: "self" } });
    expect(judgePendingIntent(intent(alive, new Date(NOW.getTime() - 1)), false, NOW).verdict).toBe("inspect");
  });

  it("inspects early when the creator exited, and commits when a lease exists", () => {
    expect(judgePendingIntent(intent({ ...alive, bootId: "b-gone", pid: 999_999 }, later), false, NOW)).toMatchObject({ verdict: "inspect" });
    expect(judgePendingIntent(intent(alive, later), true, NOW).verdict).toBe("commit");
  });

  it("reads a stored identity leniently: a wrong or missing field is null, not an error", () => {
    expect(asIdentity({ bootId: "b", pid: "12", startedAt: 5 })).toEqual({ bootId: "b", pid: null, startedAt: null, startTicks: null, pidSpace: null });
    expect(asIdentity(null)).toBeNull();
    expect(judgePendingIntent(intent(null, later), false, NOW)).toMatchObject({ verdict: "wait", creatorVerdict: { verdict: "unknown", reason: "unidentified" } });
  });
});
