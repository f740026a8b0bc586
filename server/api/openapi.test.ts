import fs from "node:fs";
import path from "node:path";
import { describe, expect, test } from "vitest";
import { OPENAPI_FILE, openApiText } from "./openapi-file";
import { API_ROUTES } from "./routes";
import { openApiDocument, roleOf } from "./openapi";
import { API_TYPES_FILE, apiTypesText } from "../../scripts/lib/api-types";

describe("the API's OpenAPI document (docs/api.md)", () => {
  test("docs/openapi.json is what the routes' schemas generate (else: npm run api:openapi)", () => {
    const checkedIn = fs.readFileSync(path.resolve(import.meta.dirname, "..", "..", OPENAPI_FILE), "utf8");
    expect(checkedIn === openApiText(), "docs/openapi.json is stale: run npm run api:openapi").toBe(true);
  });

  test("examples/api.d.ts, the example client's types, is what openapi-typescript makes of it (else: npm run api:openapi)", async () => {
    const checkedIn = fs.readFileSync(path.resolve(import.meta.dirname, "..", "..", API_TYPES_FILE), "utf8");
    expect(checkedIn === (await apiTypesText(openApiDocument())), "examples/api.d.ts is stale: run npm run api:openapi").toBe(true);
  });

  test("every route calls a procedure that exists and declares a role; no route is an admin's", () => {
    for (const r of API_ROUTES) expect([r.operationId, roleOf(r.procedure)]).toEqual([r.operationId, expect.toBeOneOf(["viewer", "board", "operator"])]);
    expect(new Set(API_ROUTES.map((r) => r.operationId)).size).toBe(API_ROUTES.length);
  });
});
