import { request, type FullConfig } from "@playwright/test";
import { addUser } from "../server/auth/users";
import { ACCOUNTS, resetSignInLimits, stateFile, type Who } from "./accounts";
import { e2eDb } from "./db";

/**
 * Runs after the product has started (and migrated the e2e database): the test accounts, each
 * signed in once and its cookies kept for the specs (stateFile). The sign-in goes to the same
 * endpoint the sign-in page posts to, without a browser: the page itself, keyboard and errors
 * included, is sign-in.spec.ts's and users.spec.ts's to test.
 */
export default async function globalSetup(config: FullConfig) {
  const baseURL = config.projects[0]?.use.baseURL;
  if (!baseURL) throw new Error("playwright.config.ts sets no baseURL");
  const db = e2eDb();
  try {
    for (const a of Object.values(ACCOUNTS)) {
      if (await db.user.findUnique({ where: { email: a.email }, select: { id: true } })) continue;
      await addUser(db, { email: a.email, role: a.role, companies: [...a.companies], password: a.password }, { id: "e2e:global-setup", role: "admin" }, { all: true });
    }
    await resetSignInLimits(db);
    for (const who of Object.keys(ACCOUNTS) as Who[]) await signIn(baseURL, who);
  } finally {
    await db.$disconnect();
  }
}

async function signIn(baseURL: string, who: Who) {
  const account = ACCOUNTS[who];
  const context = await request.newContext({ baseURL, extraHTTPHeaders: { origin: new URL(baseURL).origin } });
  try {
    const res = await context.post("/api/auth/sign-in/email", { data: { email: account.email, password: account.password } });
    if (!res.ok()) throw new Error(`signing ${account.email} in: ${res.status()} ${await res.text()}`);
    // The session works, as that person with that role.
    const me = await context.get(`/api/trpc/me.get?input=${encodeURIComponent(JSON.stringify({ json: null }))}`);
    const body = (await me.json()) as { result?: { data: { json: { email: string; role: string } } } };
    const got = body.result?.data.json;
    if (got?.email !== account.email || got.role !== account.role) throw new Error(`signed in as ${account.email}, me.get answers ${me.status()} ${JSON.stringify(body)}`);
    await context.storageState({ path: stateFile(who) });
  } finally {
    await context.dispose();
  }
}
