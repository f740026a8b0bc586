// postinstall: generate the Prisma client offline. Prisma's CLI first tries to fetch a
// native schema-engine binary it does not need for `generate`; pointing it at any
// existing file stops that download (STACK.md).
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import fs from "node:fs";
import path from "node:path";

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const bin = path.join(root, "node_modules", ".bin", "prisma");
if (!fs.existsSync(bin)) {
  console.log("prisma-generate: prisma CLI not installed (production install?), skipping");
  process.exit(0);
}
const placeholder = path.join(root, "package.json");
const result = spawnSync(bin, ["generate"], {
  cwd: root,
  stdio: "inherit",
  env: { ...process.env, PRISMA_SCHEMA_ENGINE_BINARY: process.env.PRISMA_SCHEMA_ENGINE_BINARY ?? placeholder, PRISMA_HIDE_UPDATE_MESSAGE: "1", CHECKPOINT_DISABLE: "1" },
});
process.exit(result.status ?? 1);
