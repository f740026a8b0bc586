import { describe, expect, it } from "vitest";
import { withTestDatabase } from "../test/context";
import { authFor, SIGN_IN_BACKOFF } from "./auth";
import { handleAuthRequest } from "./handler";
import { addUser, sessionUser } from "./users";

/** The real sign-in endpoints (better-auth's handler), against PostgreSQL. */

const t = withTestDatabase();
const admin = { id: "test", role: "admin" };
const ORIGIN = "http://localhost:3000";

function signIn(email: string, password: string, ip = "203.0.113.7", cookie?: string) {
  return handleAuthRequest(t.current.db,
    new Request(`${ORIGIN}/api/auth/sign-in/email`, {
      method: "POST",
      headers: { "content-type": "application/json", origin: ORIGIN, "x-forwarded-for": ip, ...(cookie ? { cookie } : {}) },
      body: JSON.stringify({ email, password }),
    }),
  );
}

function signInForm(email: string, password: string, ip: string) {
  return handleAuthRequest(t.current.db,
    new Request(`${ORIGIN}/api/auth/sign-in/email`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", origin: ORIGIN, "x-forwarded-for": ip },
      body: new URLSearchParams({ email, password }).toString(),
    }),
  );
}

function cookieOf(res: Response): string {
  return res.headers.getSetCookie().map((c) => c.split(";")[0]).join("; ");
}

describe("sign-in", () => {
  it("signs a person in with email and password; the session names their role and companies", async () => {
    await addUser(t.current.db, { email: "Board@Example.com", role: "board", companies: ["co-a"], password: "correct horse battery" }, admin, { all: true });
    const res = await signIn("board@example.com", "correct horse battery");
    expect(res.status).toBe(200);
    const setCookie = res.headers.getSetCookie().join("\n");
    expect(setCookie).toMatch(/runwarden\.session_token=/);
    expect(setCookie).toMatch(/HttpOnly/i);
    expect(setCookie).toMatch(/SameSite=Lax/i);
    const user = await sessionUser(t.current.db, new Headers({ cookie: cookieOf(res) }));
    expect(user).toMatchObject({ email: "board@example.com", role: "board", scope: { all: false, companies: ["co-a"] } });
    const row = await t.current.db.session.findFirstOrThrow({ where: { userId: user!.id } });
    expect(row.token).toBeTruthy();
  });

  it("refuses a wrong password, and stores no password in clear", async () => {
    await addUser(t.current.db, { email: "v@example.com", role: "viewer", companies: ["co-a"], password: "the right one!" }, admin, { all: true });
    expect((await signIn("v@example.com", "the wrong one", "203.0.113.8")).status).toBe(401);
    const account = await t.current.db.account.findFirstOrThrow({ where: { user: { email: "v@example.com" } } });
    expect(account.password).not.toContain("the right one");
    const audit = await t.current.db.auditEntry.findMany({ where: { action: "user.add" } });
    expect(JSON.stringify(audit.map((a) => [a.input, a.detail]))).not.toMatch(/right one|battery/);
  });

  it("has no sign-up: people are added by an admin", async () => {
    const res = await authFor(t.current.db).handler(
      new Request(`${ORIGIN}/api/auth/sign-up/email`, {
        method: "POST",
        headers: { "content-type": "application/json", origin: ORIGIN },
        body: JSON.stringify({ email: "new@example.com", password: "a long password", name: "x" }),
      }),
    );
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(await t.current.db.user.count({ where: { email: "new@example.com" } })).toBe(0);
  });

  it("rate-limits sign-in attempts per client", async () => {
    await addUser(t.current.db, { email: "o@example.com", role: "operator", companies: ["*"], password: "operator password" }, admin, { all: true });
    const statuses: number[] = [];
    for (let i = 0; i < SIGN_IN_BACKOFF.free + 2; i++) statuses.push((await signIn("o@example.com", `guess ${i}`, "198.51.100.9")).status);
    expect(statuses.slice(0, SIGN_IN_BACKOFF.free).every((s) => s === 401)).toBe(true);
    expect(statuses.at(-1)).toBe(429);
    // Another client is not held back by it.
    await addUser(t.current.db, { email: "p@example.com", role: "operator", companies: ["*"], password: "second password" }, admin, { all: true });
    expect((await signIn("p@example.com", "second password", "198.51.100.10")).status).toBe(200);
  });

  it("limits attempts on one account whatever address each attempt claims", async () => {
    await addUser(t.current.db, { email: "target@example.com", role: "admin", companies: ["*"], password: "the real password" }, admin, { all: true });
    const statuses: number[] = [];
    for (let i = 0; i < SIGN_IN_BACKOFF.free + 2; i++) statuses.push((await signIn("Target@Example.com", `guess ${i}`, `192.0.2.${i + 1}`)).status);
    expect(statuses.slice(0, SIGN_IN_BACKOFF.free).every((s) => s === 401)).toBe(true);
    expect(statuses.at(-1)).toBe(429);
  });

  // Sign-in throttling (docs/access.md): better-auth also takes form bodies, which were never counted.
  it("counts every attempt whatever its encoding: a form-encoded body is refused, never checked", async () => {
    await addUser(t.current.db, { email: "form@example.com", role: "admin", companies: ["*"], password: "the form password" }, admin, { all: true });
    const statuses: number[] = [];
    for (let i = 0; i < SIGN_IN_BACKOFF.free + 3; i++) statuses.push((await signInForm("form@example.com", i === SIGN_IN_BACKOFF.free + 2 ? "the form password" : `guess ${i}`, `192.0.2.${100 + i}`)).status);
    expect(statuses.every((s) => s === 415 || s === 429)).toBe(true);
    expect(await t.current.db.session.count({ where: { user: { email: "form@example.com" } } })).toBe(0);
  });

  it("backs off exponentially per account and address: 1 s, then 2 s, …", async () => {
    await addUser(t.current.db, { email: "slow@example.com", role: "viewer", companies: ["co-a"], password: "slow password!" }, admin, { all: true });
    for (let i = 0; i < SIGN_IN_BACKOFF.free; i++) expect((await signIn("slow@example.com", `guess ${i}`, "198.51.100.50")).status).toBe(401);
    const first = await signIn("slow@example.com", "guess", "198.51.100.50");
    expect(first.status).toBe(429);
    expect(Number(first.headers.get("retry-after"))).toBe(1);
    // The condition is the clock itself: the 1 s back-off must have passed.
    await new Promise((r) => setTimeout(r, 1100));
    expect((await signIn("slow@example.com", "guess again", "198.51.100.50")).status).toBe(401);
    const failedAt = Date.now();
    const second = await signIn("slow@example.com", "guess", "198.51.100.50");
    expect(second.status).toBe(429);
    // The wait is now 2 s from that failure; a loaded machine may spend part of it on this request.
    const waited = Date.now() - failedAt;
    const retryAfter = Number(second.headers.get("retry-after"));
    expect(retryAfter).toBeLessThanOrEqual(2);
    expect(retryAfter).toBeGreaterThanOrEqual(Math.max(1, Math.ceil((2000 - waited) / 1000)));
  });

  it("strangers guessing from forged addresses never hold the owner out of a browser they signed in from", async () => {
    await addUser(t.current.db, { email: "owner@example.com", role: "admin", companies: ["*"], password: "the owner password" }, admin, { all: true });
    const first = await signIn("owner@example.com", "the owner password", "203.0.113.99");
    expect(first.status).toBe(200);
    const device = first.headers.getSetCookie().map((c) => c.split(";")[0]).find((c) => c?.startsWith("runwarden.device="));
    expect(device).toBeTruthy();
    // Strangers guess until the account's back-off is long (≥ 8 s), so the checks below fall
    // inside it however slowly a loaded machine answers each request.
    let last = 0;
    let i = 0;
    for (; i < SIGN_IN_BACKOFF.free + 20; i++) {
      const res = await signIn("owner@example.com", `guess ${i}`, `192.0.2.${150 + i}`);
      if (res.status === 429 && Number(res.headers.get("retry-after")) >= 8) {
        last = res.status;
        break;
      }
      expect([401, 429]).toContain(res.status);
      // Inside a short back-off: wait it out, so the next guess counts and doubles it.
      if (res.status === 429) await new Promise((r) => setTimeout(r, Number(res.headers.get("retry-after")) * 1000));
    }
    expect(last).toBe(429);
    // The owner's browser, even from the address the strangers forged last, gets in at once.
    expect((await signIn("owner@example.com", "the owner password", `192.0.2.${150 + i}`, device)).status).toBe(200);
    // A forged or foreign device cookie counts for nothing.
    const forged = `runwarden.device=${Buffer.from("owner@example.com|x|bad").toString("base64url")}`;
    expect((await signIn("owner@example.com", "the owner password", "192.0.2.250", forged)).status).toBe(429);
  });
});
