import fs from "node:fs";
import { createRequire } from "node:module";
import { PrismaPg } from "@prisma/adapter-pg";
import { bindMigrationAwareSqlAdapterFactory } from "@prisma/driver-adapter-utils";
import * as bg from "@prisma/schema-engine-wasm/schema_engine_bg";

/**
 * Prisma's schema engine as WebAssembly (the native binary cannot be downloaded here,
 * STACK.md). Used only for diffing two datamodels, which needs no shadow database.
 */

interface PanicRegistry {
  message: string;
  set_message(m: string): void;
}

let instantiated = false;

function instantiate(): void {
  if (instantiated) return;
  // Without it a panic reads "Cannot read properties of undefined (reading 'set_message')".
  const g = globalThis as unknown as { PRISMA_WASM_PANIC_REGISTRY?: PanicRegistry };
  g.PRISMA_WASM_PANIC_REGISTRY ??= {
    message: "",
    set_message(m: string) {
      this.message = m;
    },
  };
  const require = createRequire(import.meta.url);
  const wasmPath = require.resolve("@prisma/schema-engine-wasm/schema_engine_bg").replace(/\.js$/, ".wasm");
  const wasmModule = new WebAssembly.Module(fs.readFileSync(wasmPath));
  const instance = new WebAssembly.Instance(wasmModule, { "./schema_engine_bg.js": bg as unknown as WebAssembly.ModuleImports });
  bg.__wbg_set_wasm(instance.exports);
  (instance.exports as unknown as { __wbindgen_start(): void }).__wbindgen_start();
  instantiated = true;
}

const noFilters = { externalTables: [], externalEnums: [] };

/**
 * SQL that turns the database described by `from` (null: an empty database) into `to`.
 * The engine insists on a live connection, so `url` must reach a PostgreSQL server.
 */
export async function diffDatamodels(url: string, from: string | null, to: string): Promise<string> {
  instantiate();
  const pool = new PrismaPg({ connectionString: url, max: 1 });
  const factory = bindMigrationAwareSqlAdapterFactory(pool);
  const engine = await bg.SchemaEngine.new({ datamodels: [["schema.prisma", to]] }, () => {}, factory);
  try {
    const result = await engine.diff({
      from: from === null ? { tag: "empty" } : { tag: "schemaDatamodel", files: [{ path: "schema.prisma", content: from }] },
      to: { tag: "schemaDatamodel", files: [{ path: "schema.prisma", content: to }] },
      script: true,
      exitCode: null,
      filters: noFilters,
    });
    return result.stdout ?? "";
  } catch (err) {
    const panic = (globalThis as unknown as { PRISMA_WASM_PANIC_REGISTRY?: PanicRegistry }).PRISMA_WASM_PANIC_REGISTRY;
    throw new Error(`schema engine: ${String(err)}${panic?.message ? ` (${panic.message})` : ""}`);
  } finally {
    engine.free();
  }
}

/** True when a generated script contains no statements. */
export function isEmptyMigration(sql: string): boolean {
  return sql
    .split("\n")
    .map((l) => l.trim())
    .every((l) => l === "" || l.startsWith("--"));
}
