import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NO_ANSWER, post, postToAddresses } from "./deliver";

/**
 * The sender's POST against a real HTTP server on loopback (docs/alerts.md "Where a webhook may
 * go"): it connects to the addresses that were checked, never to a second DNS answer; a
 * destination the policy refuses is not contacted; a request without an answer says only that.
 */

let server: http.Server;
let port: number;
const seen: Array<{ host: string | undefined; body: string }> = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      seen.push({ host: req.headers.host, body: Buffer.concat(chunks).toString("utf8") });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe("the sender's POST", () => {
  it("connects to the checked address under the URL's name, without resolving the name again (.invalid never resolves)", async () => {
    seen.length = 0;
    const url = new URL(`http://rebound.invalid:${port}/hook?x=1`);
    const answer = await postToAddresses(url, "rebound.invalid", [{ address: "127.0.0.1", family: 4 }], '{"a":1}', { "webhook-id": "w1" }, 5_000);
    expect(answer).toEqual({ status: 204 });
    expect(seen).toEqual([{ host: `rebound.invalid:${port}`, body: '{"a":1}' }]);
  });

  it("does not contact a destination whose name resolves to a refused address", async () => {
    seen.length = 0;
    const answer = await post(`http://localhost:${port}/hook`, "{}", {}, 5_000, { allow: [] });
    expect(answer).toEqual({
      error: "not delivered: refused, the name resolves to a loopback address; allow it with RUNWARDEN_ALERT_ALLOW_NETWORKS",
      detail: expect.stringMatching(/^localhost resolves to (127\.0\.0\.1|::1), a loopback address/),
    });
    expect(seen).toHaveLength(0);
    // The same destination, allowed by the operator, is reached: the refusal above is the policy's doing.
    expect(await post(`http://127.0.0.1:${port}/hook`, "{}", {}, 5_000, { allow: ["127.0.0.1/32"] })).toEqual({ status: 204 });
    expect(seen).toHaveLength(1);
  });

  it("a closed port: the answer says no answer; the reason (the errno) is only in the detail for the controller's log", async () => {
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const closedPort = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const answer = await post(`http://127.0.0.1:${closedPort}/hook`, "{}", {}, 5_000, { allow: ["127.0.0.1/32"] });
    expect(answer).toEqual({ error: NO_ANSWER, detail: "ECONNREFUSED" });
    expect(NO_ANSWER).not.toMatch(/ECONN|refused|timed out/i);
  });

  it("a receiver that never answers: the same no answer once the timeout passes (a filtered port reads like a closed one)", async () => {
    const silent = http.createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    try {
      const started = Date.now();
      const answer = await post(`http://127.0.0.1:${(silent.address() as AddressInfo).port}/hook`, "{}", {}, 300, { allow: ["127.0.0.1/32"] });
      expect(answer).toEqual({ error: NO_ANSWER, detail: "timed out after 300 ms" });
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      silent.closeAllConnections();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
  });

  it("a timeout reads as the whole budget even when the machine was slow before the request went out (the lookup's time is the budget's, not the message's)", async () => {
    const silent = http.createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    try {
      const answer = post(`http://127.0.0.1:${(silent.address() as AddressInfo).port}/hook`, "{}", {}, 300, { allow: ["127.0.0.1/32"] });
      // A loaded machine: the event loop is busy between the lookup's start and its answer.
      const busyUntil = Date.now() + 60;
      while (Date.now() < busyUntil) { /* the loaded machine CI ran on */ }
      expect(await answer).toEqual({ error: NO_ANSWER, detail: "timed out after 300 ms" });
    } finally {
      silent.closeAllConnections();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
  });
});
