// Loaded with `node --import` into every part `npm start` runs (emulator, controller,
// dashboard, first-boot wave): a part never outlives the start script that launched it. Linux
// re-parents an orphan, so a changed parent pid means the launcher is gone, however it ended
// (SIGKILL, the OOM killer): the part then stops itself the way it stops on a SIGTERM (each
// drains or closes in its own handler), and exits regardless if that takes longer than the grace.
// No dependencies: it runs before any of the part's own code, in any part.
// The launcher names itself (`?parent=PID` on this module's URL): a launcher that died before
// this line ran would otherwise be missed, its orphan reading init's pid as its parent's.
const parent = Number(new URL(import.meta.url).searchParams.get("parent")) || process.ppid;
const GRACE_MS = 10_000;
const timer = setInterval(() => {
  if (process.ppid === parent) return;
  clearInterval(timer);
  // Its output went to the launcher, which is gone: every write would fail (EPIPE), and a part
  // whose SIGTERM handler logs (the dashboard's does) would not get past it. Nobody reads it now.
  for (const stream of [process.stdout, process.stderr]) {
    stream.on("error", () => {});
    stream.write = (_chunk, encoding, callback) => {
      const done = typeof encoding === "function" ? encoding : callback;
      if (typeof done === "function") queueMicrotask(() => done());
      return true;
    };
  }
  setTimeout(() => process.exit(1), GRACE_MS).unref();
  process.kill(process.pid, "SIGTERM");
}, 500);
timer.unref();
