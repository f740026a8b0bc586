import fs from "node:fs";

/**
 * A controller process with a clock of its own: libfaketime (Debian's `libfaketime`; `.ci/run`
 * installs it) preloaded with an offset, so the process's own clock is moved and nothing is
 * faked inside the code. `offset` as libfaketime reads it: "+120s", "-600s".
 */
const FAKETIME_LIBS = ["/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1", "/usr/lib/aarch64-linux-gnu/faketime/libfaketimeMT.so.1", "/usr/lib/faketime/libfaketimeMT.so.1"];

export function faketime(offset: string): Record<string, string> {
  const lib = FAKETIME_LIBS.find((p) => fs.existsSync(p));
  if (!lib) throw new Error(`libfaketime is not installed (looked for ${FAKETIME_LIBS.join(", ")}): apt-get install libfaketime`);
  return { LD_PRELOAD: lib, FAKETIME: offset };
}
