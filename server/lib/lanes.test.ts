import { describe, expect, it } from "vitest";
import { inLanes } from "./lanes";

const tick = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("inLanes", () => {
  it("does every item once, never more than `limit` at once, and hands each its index", async () => {
    const seen: Array<[number, number]> = [];
    let running = 0;
    let most = 0;
    await inLanes([10, 11, 12, 13, 14, 15, 16], 3, async (item, i) => {
      running++;
      most = Math.max(most, running);
      await tick(item % 3);
      seen.push([i, item]);
      running--;
    });
    expect(seen.sort((a, b) => a[0] - b[0])).toEqual([[0, 10], [1, 11], [2, 12], [3, 13], [4, 14], [5, 15], [6, 16]]);
    expect(most).toBe(3);
  });

  it("takes no item after a failure, and throws the first once the items in work have ended", async () => {
    const started: number[] = [];
    const ended: number[] = [];
    const run = inLanes([0, 1, 2, 3, 4, 5], 2, async (item) => {
      started.push(item);
      if (item === 1) throw new Error("item 1 failed");
      await tick(20);
      ended.push(item);
    });
    await expect(run).rejects.toThrow("item 1 failed");
    expect(started).toEqual([0, 1]);
    expect(ended).toEqual([0]);
  });

  it("does nothing for no items", async () => {
    let calls = 0;
    await inLanes([], 4, async () => {
      calls++;
    });
    expect(calls).toBe(0);
  });
});
