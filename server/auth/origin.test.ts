import { describe, expect, it } from "vitest";
import { crossSiteOrigin } from "./origin";

/** The same-origin check (docs/access.md) compares scheme, host and port, not the host alone. */

const post = (url: string, origin: string | null, host = new URL(url).host) =>
  new Request(url, { method: "POST", headers: { host, ...(origin === null ? {} : { origin }) } });

describe("crossSiteOrigin", () => {
  it("accepts the request's own origin and a request without Origin", () => {
    expect(crossSiteOrigin(post("https://dash.example:8443/api/trpc/runs.retry", "https://dash.example:8443"))).toBeNull();
    expect(crossSiteOrigin(post("https://dash.example:8443/api/trpc/runs.retry", null))).toBeNull();
  });

  it("refuses the same host over another scheme", () => {
    expect(crossSiteOrigin(post("https://dash.example:8443/api/trpc/runs.retry", "http://dash.example:8443"))).toBe("http://dash.example:8443");
  });

  it("refuses the same host name on another port", () => {
    expect(crossSiteOrigin(post("http://dash.example/api/trpc/runs.retry", "http://dash.example:8080", "dash.example"))).toBe("http://dash.example:8080");
  });

  it("refuses an origin with a path or an opaque origin", () => {
    expect(crossSiteOrigin(post("https://dash.example/api/trpc/x", "https://dash.example/evil"))).toBe("https://dash.example/evil");
    expect(crossSiteOrigin(post("https://dash.example/api/trpc/x", "null"))).toBe("null");
  });
});
