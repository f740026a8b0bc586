import { addUser } from "../server/auth/users";
import { ACCOUNTS } from "./accounts";
import { e2eDb } from "./db";

/** Runs after the product has started (and migrated the e2e database): the test accounts. */
export default async function globalSetup() {
  const db = e2eDb();
  try {
    for (const a of Object.values(ACCOUNTS)) {
      if (await db.user.findUnique({ where: { email: a.email }, select: { id: true } })) continue;
      await addUser(db, { email: a.email, role: a.role, companies: [...a.companies], password: a.password }, { id: "e2e:global-setup", role: "admin" }, { all: true });
    }
  } finally {
    await db.$disconnect();
  }
}
