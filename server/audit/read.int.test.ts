import { beforeAll, describe, expect, it } from "vitest";
import { auditExportFilename, auditExportResponse, listAudit, parseAuditExportQuery } from "./read";
import { authFor } from "../auth/auth";
import { addUser } from "../auth/users";
import { withTestDatabase } from "../test/context";

/** The audit export (GET /api/audit/export): session, parameters, company scope, the file. */

const t = withTestDatabase();
const ORIGIN = "http://localhost:3000";
const NOW = new Date("2030-01-31T12:34:56.789Z");
let boardCookie: string;
let operatorCookie: string;

async function signIn(email: string, password: string, ip: string): Promise<string> {
  const res = await authFor(t.current.db).handler(
    new Request(`${ORIGIN}/api/auth/sign-in/email`, {
      method: "POST",
      headers: { "content-type": "application/json", origin: ORIGIN, "x-forwarded-for": ip },
      body: JSON.stringify({ email, password }),
    }),
  );
  expect(res.status).toBe(200);
  return res.headers.getSetCookie().map((c) => c.split(";")[0]).join("; ");
}

function exportAs(cookie: string | null, query: string) {
  return auditExportResponse(t.current.db, new Request(`${ORIGIN}/api/audit/export${query}`, { headers: cookie ? { cookie } : {} }), NOW);
}

beforeAll(async () => {
  const { db } = t.current;
  const admin = { id: "test", role: "admin" };
  await addUser(db, { email: "board-a@example.com", role: "board", companies: ["co-a"], password: "board a password" }, admin, { all: true });
  await addUser(db, { email: "ops@example.com", role: "operator", companies: ["*"], password: "operator password" }, admin, { all: true });
  boardCookie = await signIn("board-a@example.com", "board a password", "203.0.113.21");
  operatorCookie = await signIn("ops@example.com", "operator password", "203.0.113.22");
  await db.auditEntry.createMany({
    data: [
      { at: new Date("2030-01-10T00:00:00Z"), actor: "board-a@example.com", role: "board", action: "run.retry", targetType: "run", targetId: "run-a", companyId: "co-a", outcome: "ok", input: { runId: "run-a" } },
      { at: new Date("2030-01-20T00:00:00Z"), actor: "someone@example.com", role: "board", action: "run.retry", targetType: "run", targetId: "run-b", companyId: "co-b", outcome: "ok" },
      { at: new Date("2030-01-25T00:00:00Z"), actor: "viewer@example.com", role: "viewer", action: "runs.retry", targetType: "procedure", targetId: "runs.retry", outcome: "refused", input: { runId: "r" } },
      { at: new Date("2029-12-01T00:00:00Z"), actor: "=cmd|' /C calc'!A0", role: "viewer", action: "run.retry", targetType: "run", targetId: "run-x", companyId: "co-x", outcome: "refused" },
    ],
  });
});

describe("GET /api/audit/export", () => {
  it("needs a session", async () => {
    const res = await exportAs(null, "?format=csv");
    expect(res.status).toBe(401);
    expect(await res.text()).toMatch(/sign in/);
  });

  it("sends a CSV attachment of what the filters match, latest entry first, formulas defused", async () => {
    const res = await exportAs(operatorCookie, "?format=csv&action=run.retry");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/csv/);
    expect(res.headers.get("content-disposition")).toBe('attachment; filename="runwarden-audit-20300131T123456Z.csv"');
    const lines = (await res.text()).trim().split("\n");
    expect(lines[0]).toBe("id,at,actor,role,action,targetType,targetId,companyId,outcome,input,detail");
    expect(lines.slice(1).map((l) => l.split(",")[6])).toEqual(['"run-x"', '"run-b"', '"run-a"']);
    // A cell a spreadsheet would run as a formula is defused.
    expect(lines[1]).toContain(`"'=cmd|' /C calc'!A0"`);

    const refused = await (await exportAs(operatorCookie, "?outcome=refused&targetType=procedure")).text();
    expect(refused.trim().split("\n")).toHaveLength(2);
    expect(refused).toContain('"runs.retry"');
  });

  it("sends JSON with the same rows, filtered by time", async () => {
    const res = await exportAs(operatorCookie, "?format=json&from=2030-01-15T00:00:00Z&to=2030-01-31");
    expect(res.headers.get("content-disposition")).toMatch(/filename="runwarden-audit-20300131T123456Z\.json"/);
    const rows = (await res.json()) as Array<{ targetId: string; at: string }>;
    expect(rows.map((r) => r.targetId)).toEqual(["runs.retry", "run-b"]);
    expect(rows[0]!.at).toBe("2030-01-25T00:00:00.000Z");
  });

  it("keeps to the person's companies", async () => {
    const rows = (await (await exportAs(boardCookie, "?format=json")).json()) as Array<{ companyId: string | null; targetId: string }>;
    expect(rows.map((r) => r.targetId)).toEqual(["run-a"]);
  });

  it("is itself audited", async () => {
    await exportAs(boardCookie, "?format=csv&actor=board-a");
    const entry = await t.current.db.auditEntry.findFirstOrThrow({ where: { action: "audit.export" }, orderBy: { id: "desc" } });
    expect(entry).toMatchObject({ actor: "board-a@example.com", role: "board", outcome: "ok", input: { format: "csv", actor: "board-a" }, detail: { rows: 1, truncated: false } });
  });

  it.each([
    ["?format=xml", "format: must be csv or json"],
    ["?outcome=maybe", "outcome:"],
    ["?from=yesterday", "from: not a date"],
    ["?to=2030-02-30T00:00:00Z", "to: not a date"],
    ["?to=2030-01-01T25:00:00Z", "to: not a date"],
    ["?from=2030-02-01&to=2030-01-01", "from: must be before to"],
    ["?actr=x", "actr: unknown parameter"],
    ["?action=a&action=b", "action: given more than once"],
  ])("refuses %s with 400 naming the parameter", async (query, message) => {
    const res = await exportAs(operatorCookie, query);
    expect(res.status).toBe(400);
    expect(await res.text()).toContain(message);
  });
});

describe("parseAuditExportQuery", () => {
  it("defaults to CSV and leaves out empty filters", () => {
    expect(parseAuditExportQuery(new URLSearchParams("actor=&outcome=ok"))).toEqual({ ok: true, format: "csv", filter: { outcome: "ok" } });
  });
  it("names files by the moment, without characters a file system refuses", () => {
    expect(auditExportFilename("json", NOW)).toBe("runwarden-audit-20300131T123456Z.json");
  });
});

describe("listAudit", () => {
  it("names a person who is the target (user.add) by email, keeping the id", async () => {
    const { db } = t.current;
    const added = await db.user.findUniqueOrThrow({ where: { email: "board-a@example.com" } });
    const page = await listAudit(db, { all: true }, { action: "user.add" });
    const entry = page.items.find((e) => e.targetId === added.id);
    expect(entry).toMatchObject({ targetType: "user", targetId: added.id, targetLabel: "board-a@example.com" });
    const run = (await listAudit(db, { all: true }, { action: "run.retry" })).items[0];
    expect(run?.targetLabel).toBeNull();
  });
});
