import dns from "node:dns/promises";
import type { LookupAddress } from "node:dns";
import net from "node:net";
import ipaddr from "ipaddr.js";
import { AppError } from "../errors";

/**
 * Where a webhook may go (docs/alerts.md "Where a webhook may go"). An admin types the URL and
 * presses Test, and a controller POSTs to it from inside the controllers' network: without a
 * rule the console is a port scanner for that network (loopback, link-local, the cloud
 * metadata address, private ranges). So a destination is judged by the addresses its name
 * resolves to — when it is added or changed, and again at every send, where the request
 * connects to exactly the addresses just checked (a DNS answer that changes in between is
 * never used). Only public unicast addresses pass, and whatever the operator allows with
 * RUNWARDEN_ALERT_ALLOW_NETWORKS. The `env` endpoint (RUNWARDEN_ALERT_WEBHOOK_URL) is the
 * operator's own and is not judged.
 */

export const ALLOW_NETWORKS_VARIABLE = "RUNWARDEN_ALERT_ALLOW_NETWORKS";

export interface DestinationPolicy {
  /** Ranges allowed although not public (CIDR, as `parseAllowNetworks` normalised them). */
  allow: readonly string[];
}

type AddressRange = ReturnType<ipaddr.IPv4["range"]> | ReturnType<ipaddr.IPv6["range"]>;

/** What each class of address is called in a refusal; null: allowed (a public address). */
const CLASS_NAME: Record<AddressRange, string | null> = {
  unicast: null,
  unspecified: "the unspecified address",
  broadcast: "the broadcast address",
  multicast: "a multicast address",
  linkLocal: "a link-local address",
  loopback: "a loopback address",
  carrierGradeNat: "a carrier-grade NAT address (100.64.0.0/10)",
  private: "a private address",
  uniqueLocal: "a private address (unique local, fc00::/7)",
  reserved: "a reserved address",
  benchmarking: "a benchmarking address",
  amt: "an AMT relay address",
  as112: "an AS112 address",
  as112v6: "an AS112 address",
  orchid2: "an ORCHIDv2 address",
  droneRemoteIdProtocolEntityTags: "a DRIP entity tag",
  ipv4Mapped: "an IPv4-mapped address",
  rfc6145: "an IPv4-translated address",
  rfc6052: "a NAT64 address",
  "6to4": "a 6to4 tunnel address",
  teredo: "a Teredo tunnel address",
};

/** The instance metadata services (AWS, GCP, Azure; AWS over IPv6): refused unless allowed on their own. */
const METADATA = new Set(["169.254.169.254", "fd00:ec2::254"].map((a) => ipaddr.parse(a).toString()));

const RANGE_EXAMPLE = "e.g. 10.0.0.0/8, 192.168.1.20 or fd00::/8";

/** RUNWARDEN_ALERT_ALLOW_NETWORKS: comma-separated ranges or single addresses, normalised to CIDR. */
export function parseAllowNetworks(text: string): { ok: true; networks: string[] } | { ok: false; error: string } {
  const networks: string[] = [];
  for (const raw of text.split(",")) {
    const item = raw.trim();
    if (item === "") continue;
    const cidr = item.includes("/") ? item : `${item}/${ipaddr.IPv6.isValid(item) ? 128 : 32}`;
    const valid = ipaddr.IPv4.isValidCIDRFourPartDecimal(cidr) || (!ipaddr.IPv4.isValid(cidr.split("/")[0] ?? "") && ipaddr.IPv6.isValidCIDR(cidr));
    if (!valid) return { ok: false, error: `${JSON.stringify(item)} is not an address or a range (${RANGE_EXAMPLE})` };
    const [address, bits] = ipaddr.parseCIDR(cidr);
    // Resolved IPv4-mapped addresses are judged as IPv4: such a range would never match.
    if (address.kind() === "ipv6" && (address as ipaddr.IPv6).isIPv4MappedAddress()) return { ok: false, error: `${JSON.stringify(item)}: give an IPv4 range as IPv4 (${RANGE_EXAMPLE})` };
    networks.push(`${address.toString()}/${bits}`);
  }
  return { ok: true, networks };
}

/** The address that decides: an IPv4-mapped IPv6 address is its IPv4 address, and so is a NAT64 one (64:ff9b::/96). */
function deciding(address: string): ipaddr.IPv4 | ipaddr.IPv6 {
  const ip = ipaddr.process(address);
  if (ip.kind() === "ipv6" && ip.range() === "rfc6052") return ipaddr.fromByteArray(ip.toByteArray().slice(12));
  return ip;
}

export type AddressJudgement = { allowed: true } | { allowed: false; address: string; what: string };

/** One resolved address against the policy. */
export function judgeAddress(address: string, policy: DestinationPolicy): AddressJudgement {
  const ip = deciding(address);
  const shown = ip.toString();
  const ranges = policy.allow.map((n) => ipaddr.parseCIDR(n));
  const matching = ranges.filter(([net]) => net.kind() === ip.kind()).filter((range) => ip.match(range));
  if (METADATA.has(shown)) {
    // A wide range allowed for a service of one's own (169.254.0.0/16) must not open the metadata service with it.
    const alone = matching.some(([, bits]) => bits === (ip.kind() === "ipv4" ? 32 : 128));
    return alone ? { allowed: true } : { allowed: false, address: shown, what: "the cloud metadata address" };
  }
  if (matching.length > 0) return { allowed: true };
  const what = CLASS_NAME[ip.range()];
  return what === null ? { allowed: true } : { allowed: false, address: shown, what };
}

export type Resolution =
  | { ok: true; url: URL; host: string; addresses: LookupAddress[] }
  | { ok: false; why: "refused"; host: string; literal: boolean; address: string; what: string }
  | { ok: false; why: "unresolved"; host: string; detail: string };

/** The URL's host without the brackets of an IPv6 literal. */
function hostOf(url: URL): string {
  return url.hostname.startsWith("[") && url.hostname.endsWith("]") ? url.hostname.slice(1, -1) : url.hostname;
}

async function lookupWithin(host: string, timeoutMs: number): Promise<LookupAddress[]> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(Object.assign(new Error(`no answer from DNS in ${timeoutMs} ms`), { code: "ETIMEOUT" })), timeoutMs);
  });
  try {
    return await Promise.race([dns.lookup(host, { all: true, verbatim: true }), late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Resolves the URL's host (as the operating system does: the hosts file, then DNS) and judges
 * every address it answers; one refused address refuses the destination. `"any"`: resolved,
 * not judged (the operator's own endpoint).
 */
export async function resolveDestination(raw: string, policy: DestinationPolicy | "any", timeoutMs: number): Promise<Resolution> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, why: "unresolved", host: "", detail: "not a URL" };
  }
  const host = hostOf(url);
  const literal = net.isIP(host);
  let addresses: LookupAddress[];
  if (literal !== 0) addresses = [{ address: host, family: literal }];
  else {
    try {
      addresses = await lookupWithin(host, timeoutMs);
    } catch (err) {
      const e = err as { code?: string; message?: string };
      return { ok: false, why: "unresolved", host, detail: e.code ?? e.message ?? String(err) };
    }
    if (addresses.length === 0) return { ok: false, why: "unresolved", host, detail: "no address" };
  }
  if (policy !== "any") {
    for (const { address } of addresses) {
      const judged = judgeAddress(address, policy);
      if (!judged.allowed) return { ok: false, why: "refused", host, literal: literal !== 0, address: judged.address, what: judged.what };
    }
  }
  return { ok: true, url, host, addresses };
}

/** A refusal as a person reads it: the address, its class, and how to allow it. */
export function describeRefusal(r: { host: string; literal: boolean; address: string; what: string }): string {
  return `${r.literal ? `${r.address} is` : `${r.host} resolves to ${r.address},`} ${r.what}; allow it with ${ALLOW_NETWORKS_VARIABLE}`;
}

/** Bound on the lookup when a destination is added or changed. */
const CHECK_LOOKUP_MS = 5_000;

/**
 * A destination an admin adds or changes: refused when it resolves to an address the policy
 * does not allow. A name that does not resolve now is accepted — every send resolves and
 * judges it again, and the dashboard's resolver need not be the controllers'.
 */
export async function checkDestination(url: string, policy: DestinationPolicy): Promise<void> {
  const r = await resolveDestination(url, policy, CHECK_LOOKUP_MS);
  if (!r.ok && r.why === "refused") {
    throw new AppError("INVALID_INPUT", `url: ${describeRefusal(r)}`, { field: "url", address: r.address, class: r.what });
  }
}
