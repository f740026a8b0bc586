import crypto from "node:crypto";
import { describe, expect, it } from "vitest";
import { checkSecret, newSecret, signedHeaders, verifySigned } from "./sign";

/** The spec's signature, computed here without the library: base64 HMAC-SHA256 of "id.timestamp.body". */
function expected(key: Buffer, id: string, ts: string, body: string): string {
  return `v1,${crypto.createHmac("sha256", key).update(`${id}.${ts}.${body}`).digest("base64")}`;
}

describe("Standard Webhooks signing", () => {
  const body = JSON.stringify({ type: "test", id: "ev-1", occurredAt: "2026-12-06T09:00:00.000Z", data: {}, text: "Runwarden: test" });
  const at = new Date("2026-12-06T09:00:00.000Z");

  it("a whsec_ secret is its base64 key: the headers match the spec's HMAC", () => {
    const secret = newSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    const h = signedHeaders(secret, "ev-1", at, body);
    expect(h["webhook-id"]).toBe("ev-1");
    expect(h["webhook-timestamp"]).toBe("1796547600");
    expect(h["webhook-signature"]).toBe(expected(Buffer.from(secret.slice(6), "base64"), "ev-1", "1796547600", body));
  });

  it("any other secret is its UTF-8 bytes", () => {
    const secret = "correct horse battery staple ✓";
    const h = signedHeaders(secret, "ev-2", at, body);
    expect(h["webhook-signature"]).toBe(expected(Buffer.from(secret, "utf8"), "ev-2", "1796547600", body));
  });

  it("a receiver verifies a fresh delivery and refuses a changed body, a wrong secret or an old timestamp", () => {
    const secret = newSecret();
    const now = new Date();
    const h = signedHeaders(secret, "ev-3", now, body);
    expect(verifySigned(secret, body, h)).toMatchObject({ type: "test", id: "ev-1" });
    expect(() => verifySigned(secret, body.replace("test", "tset"), h)).toThrow(/signature/);
    expect(() => verifySigned(newSecret(), body, h)).toThrow(/signature/);
    const old = signedHeaders(secret, "ev-3", new Date(now.getTime() - 10 * 60_000), body);
    expect(() => verifySigned(secret, body, old)).toThrow(/too old/);
  });

  it("the same id and body sign the same at the same second (a retry differs only by its timestamp)", () => {
    const secret = newSecret();
    expect(signedHeaders(secret, "ev-4", at, body)).toEqual(signedHeaders(secret, "ev-4", new Date(at.getTime() + 400), body));
  });

  it("refuses a whsec_ secret that is not base64", () => {
    expect(checkSecret("whsec_not base64!")).toMatch(/base64/);
    expect(checkSecret(newSecret())).toBeNull();
  });
});
