/**
 * Hourly cost of a sandbox from its resources. The default rates are Daytona's published
 * pay-as-you-go prices (per second: vCPU $0.000014, memory $0.0000045/GiB, storage
 * $0.00000003/GiB), expressed per hour. Daytona's organisation-wide free 5 GiB of storage
 * is not applied per sandbox, so the figure is an upper bound. Pass other rates for
 * another provider or a negotiated price.
 */
export interface ResourceRates {
  /** USD per vCPU-hour. */
  cpuPerHour: number;
  /** USD per GiB-hour of memory. */
  memoryGiBPerHour: number;
  /** USD per GiB-hour of disk. */
  diskGiBPerHour: number;
}

export const DEFAULT_RATES: ResourceRates = Object.freeze({
  cpuPerHour: 0.0504,
  memoryGiBPerHour: 0.0162,
  diskGiBPerHour: 0.000108,
});

export function hourlyCost(resources: { cpu: number; memory: number; disk: number }, rates: ResourceRates = DEFAULT_RATES): number {
  const raw =
    Math.max(0, resources.cpu) * rates.cpuPerHour +
    Math.max(0, resources.memory) * rates.memoryGiBPerHour +
    Math.max(0, resources.disk) * rates.diskGiBPerHour;
  // Micro-dollar precision: enough for a display, stable under float noise.
  return Math.round(raw * 1e6) / 1e6;
}

/** Whole seconds from `createdAt` to `now`, never negative (clock skew with the provider). */
export function ageSeconds(createdAt: string | Date, now: Date): number {
  const created = typeof createdAt === "string" ? Date.parse(createdAt) : createdAt.getTime();
  if (!Number.isFinite(created)) return 0;
  return Math.max(0, Math.floor((now.getTime() - created) / 1000));
}
