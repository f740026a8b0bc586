import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunwardenError, runwardenClient } from "../../examples/platform-client";
import type { ControllerContext } from "../controller/context";
import { servicesOf } from "../services";
import { startControllerHarness, type ControllerHarness } from "../test/controller";
import { createApiToken } from "../tokens/create";
import { handleApiRequest } from "./handle";

/**
 * The example client (examples/platform-client.ts, docs/api.md) against the API's real handler
 * over real HTTP: a submit whose answer is lost is sent again with its key and makes one run,
 * the run reads back, a refusal arrives as the one error shape.
 */

let h: ControllerHarness;
let service: ControllerContext;
let server: http.Server;
let baseUrl: string;

beforeAll(async () => {
  h = await startControllerHarness();
  service = h.service();
  server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      const request = new Request(`http://${req.headers.host}${req.url}`, { method: req.method, headers: req.headers as Record<string, string>, ...(body.length ? { body } : {}) });
      void handleApiRequest(request, { db: h.db.db, services: servicesOf(service) }).then(async (answer) => {
        res.writeHead(answer.status, Object.fromEntries(answer.headers));
        res.end(Buffer.from(await answer.arrayBuffer()));
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  await h.close();
});

describe("the example platform client", () => {
  it("a submit whose answer was lost is sent again with its key: one run, the second answer replayed; the run reads back; a refusal is a RunwardenError", async () => {
    const { token } = await createApiToken(h.db.db, servicesOf(service).instanceId, { id: "admin@test.local", role: "admin" }, { all: true }, { name: "example", role: "operator", companies: ["co-1"], expiresIn: "1d" });
    let lost = 0;
    // The first answer is lost on the way back (a timeout after the server acted), as a platform meets it.
    const lossy: typeof fetch = async (input, init) => {
      const res = await fetch(input, init);
      if (lost++ === 0) throw new DOMException("The operation timed out.", "TimeoutError");
      return res;
    };
    const client = runwardenClient({ baseUrl, token, fetch: lossy });
    const { run, replayed } = await client.submitSurely({ companyId: "co-1", taskId: "example-task", agent: "a", provider: "codex", turns: 2, externalId: "board-run-1" }, "board-run-1-attempt-1");
    expect(replayed).toBe(true);
    expect(await h.db.db.run.count({ where: { taskId: "example-task" } })).toBe(1);
    const read = await client.get(run.id);
    expect(read).toMatchObject({ id: run.id, taskId: "example-task", externalId: "board-run-1", status: "queued", retryOffered: false, retryBlocker: expect.any(String) });
    const refused = await client.retry(run.id).then(() => null, (e: unknown) => e);
    expect(refused).toBeInstanceOf(RunwardenError);
    expect(refused).toMatchObject({ status: expect.toBeOneOf([409, 412]), code: expect.toBeOneOf(["CONFLICT", "PRECONDITION_FAILED"]) });
  });
});
