import { describe, expect, it } from "vitest";
import { describeInspection } from "./inspection";

describe("describeInspection", () => {
  it("says in words what the sweep's provider lookup found", () => {
    expect(describeInspection(null)).toBeNull();
    expect(describeInspection({ found: false, at: "2026-11-12T00:00:00.000Z" })).toBe("No sandbox with its exact name existed at the provider.");
    expect(describeInspection({ error: "HTTP 503 from the provider", at: "2026-11-12T00:00:00.000Z" })).toBe("The provider could not be asked: HTTP 503 from the provider");
    expect(
      describeInspection({ found: true, sandboxId: "sbx-1", sandbox: { name: "rw-create-op-1", labels: { instance: "inst-a", company: "co-1" } }, at: "2026-11-12T00:00:00.000Z" }),
    ).toBe("Found sandbox sbx-1 named rw-create-op-1, labelled instance inst-a, company co-1, operation missing.");
    expect(describeInspection([1, 2])).toBe("An inspection in a form this version does not read.");
    expect(describeInspection({ something: "else" })).toBe("An inspection in a form this version does not read.");
  });
});
