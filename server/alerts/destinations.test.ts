import { describe, expect, it } from "vitest";
import { describeRefusal, judgeAddress, parseAllowNetworks, resolveDestination } from "./destinations";

/** Where a webhook may go (docs/alerts.md "Where a webhook may go"): the address classes, the allow-list, a real resolution. */

const NONE = { allow: [] };

describe("judgeAddress", () => {
  it.each([
    ["127.0.0.1", "a loopback address"],
    ["::1", "a loopback address"],
    ["169.254.169.254", "the cloud metadata address"],
    ["fd00:ec2::254", "the cloud metadata address"],
    ["169.254.1.1", "a link-local address"],
    ["fe80::1", "a link-local address"],
    ["10.1.2.3", "a private address"],
    ["172.16.5.4", "a private address"],
    ["192.168.0.10", "a private address"],
    ["fc00::1", "a private address (unique local, fc00::/7)"],
    ["100.64.0.1", "a carrier-grade NAT address (100.64.0.0/10)"],
    ["0.0.0.0", "the unspecified address"],
    ["::", "the unspecified address"],
    ["224.0.0.251", "a multicast address"],
    ["ff02::1", "a multicast address"],
  ])("refuses %s: %s", (address, what) => {
    expect(judgeAddress(address, NONE)).toMatchObject({ allowed: false, what });
  });

  it("judges an IPv4 address carried in IPv6 (mapped, NAT64) as that IPv4 address", () => {
    expect(judgeAddress("::ffff:127.0.0.1", NONE)).toEqual({ allowed: false, address: "127.0.0.1", what: "a loopback address" });
    expect(judgeAddress("64:ff9b::a00:1", NONE)).toEqual({ allowed: false, address: "10.0.0.1", what: "a private address" });
    expect(judgeAddress("64:ff9b::808:808", NONE)).toEqual({ allowed: true });
  });

  it("lets public addresses through", () => {
    expect(judgeAddress("8.8.8.8", NONE)).toEqual({ allowed: true });
    expect(judgeAddress("2606:4700::1111", NONE)).toEqual({ allowed: true });
  });

  it("lets through what the operator allows; the metadata address only when allowed on its own", () => {
    const allow = parseAllowNetworks("10.0.0.0/8,169.254.0.0/16");
    if (!allow.ok) throw new Error(allow.error);
    expect(judgeAddress("10.9.8.7", { allow: allow.networks })).toEqual({ allowed: true });
    expect(judgeAddress("169.254.10.1", { allow: allow.networks })).toEqual({ allowed: true });
    expect(judgeAddress("169.254.169.254", { allow: allow.networks })).toMatchObject({ allowed: false, what: "the cloud metadata address" });
    expect(judgeAddress("169.254.169.254", { allow: ["169.254.169.254/32"] })).toEqual({ allowed: true });
    expect(judgeAddress("192.168.0.1", { allow: allow.networks })).toMatchObject({ allowed: false });
  });
});

describe("parseAllowNetworks", () => {
  it("takes ranges and single addresses, and names a wrong entry", () => {
    expect(parseAllowNetworks(" 10.0.0.0/8 ,192.168.1.20, fd00::/8,")).toEqual({ ok: true, networks: ["10.0.0.0/8", "192.168.1.20/32", "fd00::/8"] });
    expect(parseAllowNetworks("10.0.0.0/33")).toMatchObject({ ok: false, error: expect.stringContaining('"10.0.0.0/33" is not an address or a range') });
    expect(parseAllowNetworks("0x7f.1")).toMatchObject({ ok: false });
    expect(parseAllowNetworks("::ffff:10.0.0.0/104")).toMatchObject({ ok: false, error: expect.stringContaining("give an IPv4 range as IPv4") });
  });
});

describe("resolveDestination", () => {
  it("resolves a name as the system does (the hosts file's localhost) and refuses its loopback address, saying how to allow it", async () => {
    const r = await resolveDestination("http://localhost:9/hook", NONE, 5_000);
    expect(r).toMatchObject({ ok: false, why: "refused", host: "localhost", literal: false, what: "a loopback address" });
    if (r.ok || r.why !== "refused") throw new Error("not refused");
    expect(describeRefusal(r)).toMatch(/^localhost resolves to (127\.0\.0\.1|::1), a loopback address; allow it with RUNWARDEN_ALERT_ALLOW_NETWORKS$/);
  });

  it("judges a literal address without a lookup, brackets and all", async () => {
    expect(await resolveDestination("http://[::1]:9/", NONE, 5_000)).toMatchObject({ ok: false, why: "refused", literal: true, address: "::1" });
    // The URL parser's reading of the host decides: 2130706433 is 127.0.0.1.
    expect(await resolveDestination("http://2130706433/", NONE, 5_000)).toMatchObject({ ok: false, why: "refused", address: "127.0.0.1" });
  });

  it("answers the checked addresses when allowed, and does not judge the operator's own endpoint", async () => {
    expect(await resolveDestination("http://127.0.0.1:9/", { allow: ["127.0.0.0/8"] }, 5_000)).toMatchObject({ ok: true, host: "127.0.0.1", addresses: [{ address: "127.0.0.1", family: 4 }] });
    expect(await resolveDestination("http://169.254.169.254/", "any", 5_000)).toMatchObject({ ok: true, addresses: [{ address: "169.254.169.254" }] });
  });

  it("says a name that does not resolve is unresolved (.invalid never does)", async () => {
    expect(await resolveDestination("https://hooks.example.invalid/x", NONE, 5_000)).toMatchObject({ ok: false, why: "unresolved", host: "hooks.example.invalid" });
  });
});
