import { openApiDocument } from "./openapi";

/** Where the document is checked in (docs/api.md links it), and its text there. */
export const OPENAPI_FILE = "docs/openapi.json";

export function openApiText(): string {
  return `${JSON.stringify(openApiDocument(), null, 2)}\n`;
}
