/**
 * `npm run api:openapi` — writes docs/openapi.json, the HTTP API's OpenAPI 3.1 document, from
 * the routes' zod schemas (server/api/openapi.ts), and examples/api.d.ts, its types for the
 * example client (openapi-typescript). server/api/openapi.test.ts fails while either differs
 * from what the code generates.
 */
import fs from "node:fs";
import path from "node:path";
import { openApiDocument } from "../server/api/openapi";
import { OPENAPI_FILE, openApiText } from "../server/api/openapi-file";
import { API_TYPES_FILE, apiTypesText } from "./lib/api-types";

fs.writeFileSync(path.resolve(OPENAPI_FILE), openApiText());
fs.writeFileSync(path.resolve(API_TYPES_FILE), await apiTypesText(openApiDocument()));
console.log(`wrote ${OPENAPI_FILE} and ${API_TYPES_FILE}`);
