import { describe, expect, it } from "vitest";
import { bulkConfirmWord, admitBulkConfirmation, type BulkConfirmationInput } from "./bulk-confirmation";

const NOW = new Date("2026-12-06T09:00:00.000Z");
const input = (over: Partial<BulkConfirmationInput> = {}, plan: Partial<BulkConfirmationInput["plan"]> = {}): BulkConfirmationInput => ({
  plan: { kind: "retry", confirmWord: "retry 3", expiresAt: new Date(NOW.getTime() + 60_000), confirmedAt: null, ...plan },
  word: "retry 3",
  planCompanies: ["co-a"],
  scope: { all: true },
  now: NOW,
  ...over,
});

describe("admitBulkConfirmation", () => {
  it("the word is the kind and the admitted count", () => {
    expect(bulkConfirmWord("retry", 37)).toBe("retry 37");
    expect(bulkConfirmWord("cancel", 2)).toBe("cancel 2");
  });

  it("proceeds on the plan's word before its expiry (surrounding spaces ignored), as the first confirmation", () => {
    expect(admitBulkConfirmation(input({ word: "  retry 3 " }))).toEqual({ verdict: "proceed", first: true, refusal: null });
  });

  it("refuses another word, naming the right one", () => {
    expect(admitBulkConfirmation(input({ word: "retry 4" }))).toMatchObject({ verdict: "refused", reason: "wrong_word", refusal: 'Type "retry 3" to retry the runs this plan admitted.' });
  });

  it("refuses an expired preview, at its expiry exactly too", () => {
    expect(admitBulkConfirmation(input({}, { expiresAt: NOW }))).toMatchObject({ verdict: "refused", reason: "expired" });
  });

  it("a repeat of a confirmed plan proceeds past the expiry (it only answers and finishes what is left)", () => {
    expect(admitBulkConfirmation(input({}, { expiresAt: new Date(0), confirmedAt: new Date(0) }))).toEqual({ verdict: "proceed", first: false, refusal: null });
  });

  it("refuses a person whose companies do not hold every run of the plan, before anything else", () => {
    const scope = { all: false as const, companies: ["co-a"] };
    expect(admitBulkConfirmation(input({ scope, planCompanies: ["co-a"] })).verdict).toBe("proceed");
    expect(admitBulkConfirmation(input({ scope, planCompanies: ["co-a", "co-b"], word: "wrong" }))).toMatchObject({ verdict: "refused", reason: "out_of_scope" });
    expect(admitBulkConfirmation(input({ scope: { all: false, companies: [] }, planCompanies: ["co-a", "co-b"] })).refusal).toMatch(/^This plan holds runs of 2 companies outside yours/);
  });
});
