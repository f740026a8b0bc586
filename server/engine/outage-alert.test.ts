import { describe, expect, it } from "vitest";
import { fc, test as fcTest } from "@fast-check/vitest";
import { judgeOutageAlert, outageAlertEvidenceSchema, type OutageAlertEvidence, type OutageController } from "./outage-alert";

/** The outage's alerts as a state with one owner (docs/alerts.md, docs/rules.md "Alerts"). */

const T0 = Date.parse("2026-12-07T10:00:00.000Z");
const t = (ms: number) => new Date(T0 + ms).toISOString();

function controller(over: Partial<OutageController> = {}): OutageController {
  return { bootId: "self", self: true, stopped: false, exited: false, lastSeenAt: t(0), openSince: null, confirmedAt: null, answeredAt: null, lastError: null, ...over };
}

function evidence(over: Partial<OutageAlertEvidence> = {}): OutageAlertEvidence {
  return outageAlertEvidenceSchema.parse({ now: t(0), minDurationMs: 30_000, silenceMs: 20_000, outage: null, controllers: [controller()], ...over });
}

const open = (since: number, confirmed: number | null = null, over: Partial<OutageController> = {}) =>
  controller({ openSince: t(since), confirmedAt: confirmed === null ? null : t(confirmed), lastError: "GET /sandbox/x: HTTP 502", ...over });
const outage = (startedAt: number, over: Partial<NonNullable<OutageAlertEvidence["outage"]>> = {}) => ({ id: "o-1", startedAt: t(startedAt), confirmedAt: null, startedAlertAt: null, ...over });

describe("judgeOutageAlert: when an outage is paged", () => {
  it("a live open breaker with no outage opens one, paging nothing yet", () => {
    const v = judgeOutageAlert(evidence({ now: t(100), controllers: [open(0)] }));
    expect(v).toMatchObject({ verdict: "open", reason: "outage_opened", startedAt: t(0), sendStarted: false, confirmedAt: null });
  });

  it("is not paged before a probe confirms it, however long it lasts", () => {
    const v = judgeOutageAlert(evidence({ now: t(600_000), outage: outage(0), controllers: [open(0)] }));
    expect(v).toMatchObject({ verdict: "hold", reason: "awaiting_confirmation", sendStarted: false });
    expect(v.checks.find((c) => c.name === "confirmed_by_probe")).toMatchObject({ ok: false });
  });

  it("is not paged before the minimum duration, confirmed or not", () => {
    const v = judgeOutageAlert(evidence({ now: t(29_999), outage: outage(0), controllers: [open(0, 1_000)] }));
    expect(v).toMatchObject({ verdict: "hold", reason: "awaiting_min_duration", sendStarted: false, confirmedAt: t(1_000) });
    expect(v.checks.find((c) => c.name === "lasted_min_duration")).toMatchObject({ ok: false, actual: 29_999 });
  });

  it("is paged once confirmed and past the minimum, and only once", () => {
    const due = judgeOutageAlert(evidence({ now: t(30_000), outage: outage(0), controllers: [open(0, 1_000)] }));
    expect(due).toMatchObject({ verdict: "send_started", reason: "outage_confirmed", sendStarted: true, sendEnded: false });
    const again = judgeOutageAlert(evidence({ now: t(31_000), outage: outage(0, { confirmedAt: t(1_000), startedAlertAt: t(30_000) }), controllers: [open(0, 1_000)] }));
    expect(again).toMatchObject({ verdict: "none", reason: "outage_paged", sendStarted: false });
  });

  it("an outage opened late (its breaker long open and confirmed) is opened and paged in one verdict; a minimum of 0 pages at confirmation", () => {
    expect(judgeOutageAlert(evidence({ now: t(40_000), controllers: [open(0, 500)] }))).toMatchObject({ verdict: "open", sendStarted: true, startedAt: t(0) });
    expect(judgeOutageAlert(evidence({ now: t(10), minDurationMs: 0, controllers: [open(0, 5)] }))).toMatchObject({ verdict: "open", sendStarted: true });
  });

  it("starts at the earliest live open breaker, and a confirmation on any live controller's row counts", () => {
    const v = judgeOutageAlert(evidence({ now: t(50_000), controllers: [controller(), open(5_000, null, { bootId: "b", self: false }), open(2_000, 9_000, { bootId: "c", self: false, lastSeenAt: t(49_000) })] }));
    expect(v).toMatchObject({ verdict: "open", startedAt: t(2_000), confirmedAt: t(9_000), sendStarted: true });
  });

  it("a gone controller's open breaker (stopped, exited, or silent past the window) opens no outage", () => {
    const gone = [
      open(0, 100, { bootId: "stopped", self: false, stopped: true }),
      open(0, 100, { bootId: "exited", self: false, exited: true }),
      open(0, 100, { bootId: "silent", self: false, lastSeenAt: t(-30_000) }),
    ];
    expect(judgeOutageAlert(evidence({ now: t(60_000), controllers: [controller(), ...gone] }))).toMatchObject({ verdict: "none", reason: "no_outage" });
  });
});

describe("judgeOutageAlert: exactly one end per start", () => {
  const paged = outage(0, { confirmedAt: t(500), startedAlertAt: t(30_000) });

  it("ends when no live breaker is open and the provider answered a live controller since it began; ended only after a started", () => {
    const v = judgeOutageAlert(evidence({ now: t(90_000), outage: paged, controllers: [controller({ answeredAt: t(89_000) })] }));
    expect(v).toMatchObject({ verdict: "end", reason: "provider_answered", sendEnded: true, endedBy: "self", orphanedBy: [] });
    const never = judgeOutageAlert(evidence({ now: t(10_000), outage: outage(0), controllers: [controller({ answeredAt: t(9_000) })] }));
    expect(never).toMatchObject({ verdict: "end", sendEnded: false });
  });

  it("does not end while another live controller's breaker is still open", () => {
    const v = judgeOutageAlert(evidence({ now: t(90_000), outage: paged, controllers: [controller({ answeredAt: t(89_000) }), open(0, 500, { bootId: "b", self: false, lastSeenAt: t(89_500) })] }));
    expect(v).toMatchObject({ verdict: "none", reason: "outage_paged", sendEnded: false });
  });

  it("an orphaned outage (the controllers that had it open are gone) is ended by the next live controller that sees the provider answer", () => {
    const dead = [open(0, 500, { bootId: "killed", self: false, exited: true }), open(0, 500, { bootId: "silent", self: false, lastSeenAt: t(60_000) })];
    const v = judgeOutageAlert(evidence({ now: t(90_000), outage: paged, controllers: [controller({ bootId: "successor", answeredAt: t(89_900) }), ...dead] }));
    expect(v).toMatchObject({ verdict: "end", sendEnded: true, endedBy: "successor", orphanedBy: ["killed", "silent"] });
  });

  it("a successor that has not seen the provider answer since the outage began ends nothing (its probe comes first)", () => {
    const dead = open(0, 500, { bootId: "killed", self: false, exited: true });
    const v = judgeOutageAlert(evidence({ now: t(90_000), outage: paged, controllers: [controller({ bootId: "successor", answeredAt: null }), dead] }));
    expect(v).toMatchObject({ verdict: "hold", reason: "awaiting_answer", sendEnded: false });
    // An answer from before the outage is no answer to it.
    expect(judgeOutageAlert(evidence({ now: t(90_000), outage: paged, controllers: [controller({ answeredAt: t(-1) }), dead] })).verdict).toBe("hold");
  });

  it("a successor whose own breaker opens joins the same outage: no second start", () => {
    const v = judgeOutageAlert(evidence({ now: t(90_000), outage: paged, controllers: [open(85_000, 85_100, { bootId: "successor" }), open(0, 500, { bootId: "killed", self: false, exited: true })] }));
    expect(v).toMatchObject({ verdict: "none", reason: "outage_paged", sendStarted: false });
  });

  /**
   * Any sequence of passes over a changing world: each verdict carried out as the shell does.
   * Exactly one ended per started, never an ended without a started, never two starts for one
   * outage, and a started only for an outage confirmed and past the minimum.
   */
  fcTest.prop([
    fc.array(
      fc.record({
        dtMs: fc.integer({ min: 0, max: 20_000 }),
        selfOpen: fc.boolean(),
        selfConfirmed: fc.boolean(),
        selfAnswered: fc.boolean(),
        otherOpen: fc.boolean(),
        otherGone: fc.boolean(),
      }),
      { minLength: 1, maxLength: 40 },
    ),
  ])("over any sequence of passes: one ended per started, started only confirmed and past the minimum", (steps) => {
    let now = 0;
    let row: { id: string; startedAt: number; confirmedAt: number | null; startedAlertAt: number | null } | null = null;
    let outages = 0;
    const sent: Array<{ type: "started" | "ended"; id: string }> = [];
    let selfSince: number | null = null;
    let otherSince: number | null = null;
    for (const s of steps) {
      now += s.dtMs;
      selfSince = s.selfOpen ? (selfSince ?? now) : null;
      otherSince = s.otherOpen ? (otherSince ?? now) : null;
      const controllers = [
        controller({ openSince: selfSince === null ? null : t(selfSince), confirmedAt: selfSince !== null && s.selfConfirmed ? t(now) : null, answeredAt: s.selfOpen || !s.selfAnswered ? null : t(now) }),
        controller({ bootId: "other", self: false, exited: s.otherGone, lastSeenAt: t(now), openSince: otherSince === null ? null : t(otherSince) }),
      ];
      const e = evidence({
        now: t(now),
        outage: row ? { id: row.id, startedAt: t(row.startedAt), confirmedAt: row.confirmedAt === null ? null : t(row.confirmedAt), startedAlertAt: row.startedAlertAt === null ? null : t(row.startedAlertAt) } : null,
        controllers,
      });
      const v = judgeOutageAlert(e);
      if (v.sendStarted) {
        const startedAt: number = row ? row.startedAt : Date.parse(v.startedAt!) - T0;
        expect(v.confirmedAt).not.toBeNull();
        expect(now - startedAt).toBeGreaterThanOrEqual(30_000);
      }
      switch (v.verdict) {
        case "open":
          expect(row).toBeNull();
          outages += 1;
          row = { id: `o-${outages}`, startedAt: Date.parse(v.startedAt!) - T0, confirmedAt: v.confirmedAt === null ? null : Date.parse(v.confirmedAt) - T0, startedAlertAt: v.sendStarted ? now : null };
          if (v.sendStarted) sent.push({ type: "started", id: row.id });
          break;
        case "send_started":
          expect(row!.startedAlertAt).toBeNull();
          row!.startedAlertAt = now;
          sent.push({ type: "started", id: row!.id });
          break;
        case "end":
          if (v.sendEnded) sent.push({ type: "ended", id: row!.id });
          else expect(row!.startedAlertAt).toBeNull();
          row = null;
          break;
        case "none":
        case "hold":
          if (row && row.confirmedAt === null && v.confirmedAt !== null) row.confirmedAt = Date.parse(v.confirmedAt) - T0;
          break;
      }
    }
    // Per outage: at most one started, at most one ended, and an ended only after its started.
    const byId = new Map<string, string[]>();
    for (const a of sent) byId.set(a.id, [...(byId.get(a.id) ?? []), a.type]);
    for (const [id, types] of byId) {
      expect(types).toEqual(row?.id === id ? ["started"] : ["started", "ended"]);
    }
  });
});
