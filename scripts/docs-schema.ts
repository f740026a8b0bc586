import { writeFile } from "node:fs/promises";
import path from "node:path";
import { evidenceJsonSchemaText } from "../server/engine/json-schema";

/**
 * `npm run docs:schema`: writes docs/evidence.schema.json from the engine's zod schemas
 * (server/engine/json-schema.ts). The file is checked in; a test fails when it is stale.
 */
const ROOT = path.resolve(import.meta.dirname, "..");
const FILE = path.join(ROOT, "docs/evidence.schema.json");

await writeFile(FILE, evidenceJsonSchemaText());
process.stdout.write(`wrote ${path.relative(ROOT, FILE)}\n`);
