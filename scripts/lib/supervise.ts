import { stopService, type Service } from "./processes";

/**
 * A crashed controller is restarted, not mourned (docs/rules.md §2.8): `npm start` keeps its
 * controller (and the emulator) running the way a process manager would — restarted after a
 * doubling back-off, the back-off reset once a start has stayed up a while, and given up
 * loudly after repeated fast crashes (a controller that cannot start would otherwise spin).
 * The rest of the product keeps serving either way.
 */

export interface RestartPolicy {
  /** Wait before the first restart (ms); doubles with each fast crash, up to capMs. */
  backoffMs: number;
  capMs: number;
  /** A start that stayed up this long was not a fast crash: the count and back-off start over. */
  stableMs: number;
  /** Fast crashes in a row before it gives up. */
  maxFastCrashes: number;
  /**
   * On stop, how long it has after SIGTERM before SIGKILL (default 10 s). A controller drains
   * for up to its drain timeout + 10 s (docs/operations.md, "Stopping"): cut short, its runs are
   * recovered as after a crash instead of resumed from a suspension.
   */
  stopGraceMs?: number;
}

export class Supervisor {
  private current: Service;
  private startedAt = Date.now();
  private fastCrashes = 0;
  private stopping = false;
  private timer: NodeJS.Timeout | null = null;
  /** Starts so far (the first included). */
  starts = 1;
  gaveUp = false;

  constructor(
    readonly name: string,
    private readonly launch: () => Service,
    private readonly policy: RestartPolicy,
    private readonly say: (line: string) => void,
  ) {
    this.current = launch();
    this.watch(this.current);
  }

  get service(): Service {
    return this.current;
  }

  /** No more restarts; the running one is stopped (SIGTERM, then SIGKILL after the grace). */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.timer) clearTimeout(this.timer);
    await stopService(this.current, this.policy.stopGraceMs);
  }

  private watch(service: Service): void {
    void service.exited.then(({ code, signal }) => {
      if (this.stopping || service !== this.current) return;
      const upMs = Date.now() - this.startedAt;
      this.fastCrashes = upMs >= this.policy.stableMs ? 1 : this.fastCrashes + 1;
      const how = signal ?? `code ${code}`;
      if (this.fastCrashes > this.policy.maxFastCrashes) {
        this.gaveUp = true;
        this.say(
          `${this.name} exited (${how}) ${this.fastCrashes} times in a row, each within ${Math.round(this.policy.stableMs / 1000)} s of its start: not restarting it again. ` +
            `The dashboard keeps serving; fix what its log above says, then restart npm start.`,
        );
        return;
      }
      const waitMs = Math.min(this.policy.backoffMs * 2 ** (this.fastCrashes - 1), this.policy.capMs);
      this.say(`${this.name} exited (${how}) after ${formatSeconds(upMs)}: restarting it in ${formatSeconds(waitMs)} (restart ${this.starts})`);
      this.timer = setTimeout(() => {
        this.timer = null;
        if (this.stopping) return;
        this.starts += 1;
        this.startedAt = Date.now();
        this.current = this.launch();
        this.watch(this.current);
      }, waitMs);
    });
  }
}

function formatSeconds(ms: number): string {
  return ms < 10_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms / 1000)} s`;
}
