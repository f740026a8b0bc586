import { describe, expect, it } from "vitest";
import { pagesById } from "./pages";

const rows = ["a", "b", "c", "d", "e"].map((id) => ({ id }));
const reader = (size: number, seen: Array<string | null>) => async (after: string | null) => {
  seen.push(after);
  return rows.filter((r) => after === null || r.id > after).slice(0, size);
};

describe("pagesById", () => {
  it("yields every page in id order, each starting after the last id of the one before", async () => {
    const seen: Array<string | null> = [];
    const pages: string[][] = [];
    for await (const page of pagesById(reader(2, seen))) pages.push(page.map((r) => r.id));
    expect(pages).toEqual([["a", "b"], ["c", "d"], ["e"]]);
    expect(seen).toEqual([null, "b", "d", "e"]);
  });

  it("stops after the page on which stop() turns true, without reading another", async () => {
    const seen: Array<string | null> = [];
    let handled = 0;
    for await (const page of pagesById(reader(2, seen), () => handled >= 1)) handled += page.length > 0 ? 1 : 0;
    expect(handled).toBe(1);
    expect(seen).toEqual([null]);
  });

  it("yields nothing for an empty table", async () => {
    const pages: unknown[] = [];
    for await (const page of pagesById(async () => [] as Array<{ id: string }>)) pages.push(page);
    expect(pages).toEqual([]);
  });

  it("with readAhead, reads the next page while the caller handles this one", async () => {
    const seen: Array<string | null> = [];
    const whileHandling: Array<Array<string | null>> = [];
    for await (const page of pagesById(reader(2, seen), undefined, { readAhead: true })) {
      whileHandling.push([...seen]);
      expect(page.length).toBeGreaterThan(0);
    }
    expect(whileHandling).toEqual([[null, "b"], [null, "b", "d"], [null, "b", "d", "e"]]);
  });

  it("with readAhead, drops a read left in flight when paging stops (its failure is no unhandled rejection)", async () => {
    const seen: Array<string | null> = [];
    const failing = async (after: string | null) => {
      seen.push(after);
      if (after !== null) throw new Error("the database went away");
      return rows.slice(0, 2);
    };
    const pages: string[][] = [];
    for await (const page of pagesById(failing, () => true, { readAhead: true })) pages.push(page.map((r) => r.id));
    expect(pages).toEqual([["a", "b"]]);
    expect(seen).toEqual([null, "b"]);
  });
});
