import { defineConfig } from "prisma/config";

// Prisma 7 reads no .env: the runtime passes DATABASE_URL to the adapter itself
// (server/db/client.ts). This file only tells the CLI where things are.
export default defineConfig({
  schema: "prisma/schema.prisma",
  migrations: { path: "prisma/migrations" },
});
