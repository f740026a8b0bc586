import fs from "node:fs";
import { describe, expect, it } from "vitest";
import { freePort } from "./sandbox-host";

describe("a sandbox's ingress port", () => {
  it("comes from below the ephemeral range and is never handed out twice", async () => {
    const [ephemeralFrom] = fs.readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/).map(Number);
    const ports: number[] = [];
    for (let i = 0; i < 400; i++) ports.push(await freePort());
    expect(new Set(ports).size).toBe(ports.length);
    expect(ports.filter((p) => p >= (ephemeralFrom ?? 32768))).toEqual([]);
  });
});
