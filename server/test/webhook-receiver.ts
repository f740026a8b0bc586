import crypto from "node:crypto";
import http from "node:http";

/** One request as the receiver saw it. */
export interface Arrival {
  id: string;
  timestamp: string;
  signature: string;
  body: string;
  /** What the receiver answered (0: it hung up without answering). */
  answered: number;
  signatureValid: boolean;
  at: number;
}

/**
 * A real webhook receiver for the alert tests (node:http on a fixed port): `down` (not
 * listening), `503`, `hang` (holds each request open until told), or `up` (200 after a short
 * delay, so two senders of one delivery would overlap). It verifies every signature itself
 * (HMAC-SHA256 over "id.timestamp.body", not the library under test) and dedupes by
 * `webhook-id` as a receiver should, counting what a careless one would have seen twice.
 */
export class WebhookReceiver {
  mode: "down" | "503" | "hang" | "up" = "down";
  readonly arrivals: Arrival[] = [];
  /** 2xx answers per webhook-id. */
  readonly accepted = new Map<string, number>();
  /** Arrivals of an id after it had been answered 2xx (a sender that did not see its own success would show here). */
  duplicatesAfterSuccess = 0;
  /** Arrivals of an id while another request of the same id was still in flight. */
  overlaps = 0;
  private readonly inFlight = new Map<string, number>();
  private readonly hung = new Set<http.ServerResponse>();
  private server: http.Server | null = null;

  constructor(
    readonly port: number,
    private readonly key: Buffer,
    private readonly upDelayMs = 50,
  ) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}/hook`;
  }

  get hanging(): number {
    return this.hung.size;
  }

  /** Unique ids answered 2xx. */
  get delivered(): number {
    return this.accepted.size;
  }

  async setMode(mode: WebhookReceiver["mode"]): Promise<void> {
    if (mode === "down") await this.stop();
    else if (!this.server) await this.listen();
    if (this.mode === "hang" && mode !== "hang") this.releaseHung();
    this.mode = mode;
  }

  private releaseHung(): void {
    for (const res of this.hung) res.socket?.destroy();
    this.hung.clear();
  }

  private async listen(): Promise<void> {
    const server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => this.handle(req, res, Buffer.concat(chunks).toString("utf8")));
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(this.port, "127.0.0.1", () => resolve());
    });
    this.server = server;
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse, body: string): void {
    const id = String(req.headers["webhook-id"] ?? "");
    const timestamp = String(req.headers["webhook-timestamp"] ?? "");
    const signature = String(req.headers["webhook-signature"] ?? "");
    const expected = `v1,${crypto.createHmac("sha256", this.key).update(`${id}.${timestamp}.${body}`).digest("base64")}`;
    const arrival: Arrival = { id, timestamp, signature, body, answered: 0, signatureValid: signature.split(" ").includes(expected), at: Date.now() };
    this.arrivals.push(arrival);
    if (this.accepted.has(id)) this.duplicatesAfterSuccess += 1;
    if ((this.inFlight.get(id) ?? 0) > 0) this.overlaps += 1;
    this.inFlight.set(id, (this.inFlight.get(id) ?? 0) + 1);
    const done = () => {
      this.inFlight.set(id, (this.inFlight.get(id) ?? 1) - 1);
      this.hung.delete(res);
    };
    res.on("close", done);
    switch (this.mode) {
      case "hang":
        this.hung.add(res);
        return;
      case "503":
        arrival.answered = 503;
        res.writeHead(503).end("unavailable");
        return;
      default:
        setTimeout(() => {
          if (this.mode !== "up") {
            arrival.answered = 503;
            res.writeHead(503).end();
            return;
          }
          arrival.answered = 200;
          this.accepted.set(id, (this.accepted.get(id) ?? 0) + 1);
          res.writeHead(200, { "content-type": "text/plain" }).end("ok");
        }, this.upDelayMs);
    }
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = null;
    this.releaseHung();
    if (!server) return;
    // Keep-alive connections too: "down" is down, not "no new connections".
    const closed = new Promise<void>((r) => server.close(() => r()));
    server.closeAllConnections();
    await closed;
  }
}
