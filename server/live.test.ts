import { describe, expect, it } from "vitest";
import { advanceLive, type LiveReading } from "./shared/live";

/** The live pages' rule on readings made up by hand (live.int.test.ts plays it against PostgreSQL). */
describe("advanceLive", () => {
  const reading = (runs: string, xmin: string, horizon: string | null): LiveReading => ({ topics: { runs, intents: "1", audit: "1", waves: "1" }, xmin, horizon });

  it("ignores topics the page does not watch and refetches on its own", () => {
    const first = advanceLive(null, reading("5", "10", null), ["runs"]);
    expect(first).toEqual({ state: { seen: "5", horizon: null }, refetch: false });
    const other = advanceLive(first.state, { ...reading("5", "11", null), topics: { runs: "5", intents: "9", audit: "1", waves: "1" } }, ["runs"]);
    expect(other.refetch).toBe(false);
    expect(advanceLive(first.state, reading("6", "12", null), ["runs"])).toEqual({ state: { seen: "6", horizon: null }, refetch: true });
  });

  it("keeps a horizon while writers counted may still run, and refetches once when they have ended", () => {
    const moved = advanceLive({ seen: "5", horizon: null }, reading("6", "20", "25"), ["runs"]);
    expect(moved).toEqual({ state: { seen: "6", horizon: 25n }, refetch: true });
    expect(advanceLive(moved.state, reading("6", "24", "30"), ["runs"]).refetch).toBe(false);
    const ended = advanceLive(moved.state, reading("6", "25", "30"), ["runs"]);
    expect(ended).toEqual({ state: { seen: "6", horizon: null }, refetch: true });
    expect(advanceLive(ended.state, reading("6", "31", "32"), ["runs"]).refetch).toBe(false);
  });
});
