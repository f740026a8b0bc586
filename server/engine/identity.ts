import type { PartialIdentity } from "./schemas";

/** A stored identity (JSON) as the engine takes it: a field of the wrong type reads as missing. */
export function asIdentity(value: unknown): PartialIdentity | null {
  if (!value || typeof value !== "object") return null;
  const v = value as Record<string, unknown>;
  return {
    bootId: typeof v.bootId === "string" ? v.bootId : null,
    pid: typeof v.pid === "number" ? v.pid : null,
    startedAt: typeof v.startedAt === "string" ? v.startedAt : null,
    startTicks: typeof v.startTicks === "number" && Number.isInteger(v.startTicks) && v.startTicks >= 0 ? v.startTicks : null,
    pidSpace: typeof v.pidSpace === "string" ? v.pidSpace : null,
  };
}
