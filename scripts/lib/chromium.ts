import fs from "node:fs";
import { chromium } from "@playwright/test";

/** Where a usable Chromium is: CHROMIUM_PATH, the system's, or Playwright's own download. */
export function findChromium(explicit?: string): string | null {
  const candidates = [explicit, "/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome", "/usr/bin/google-chrome-stable"];
  for (const c of candidates) if (c && fs.existsSync(c)) return c;
  try {
    const own = chromium.executablePath();
    if (own && fs.existsSync(own)) return own;
  } catch {
    // Playwright has no browser of its own either.
  }
  return null;
}

export const HOW_TO_GET_CHROMIUM = [
  "no Chromium found for the browser tests. Install one:",
  "  Debian/Ubuntu:  apt-get update && apt-get install -y chromium",
  "  elsewhere:      npx playwright install chromium",
  "  or point CHROMIUM_PATH at an existing Chromium/Chrome binary.",
].join("\n");

/** Flags that keep Debian's Chromium quiet on a machine without internet (STACK.md). */
export const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];
