#!/usr/bin/env node
// The demo agent: what a turn runs when a run names no --agent-command. It does one real,
// countable thing per turn: appends one line to `runwarden-demo-marker.txt` in the work dir
// (its cwd), so "each turn happened exactly once" can be checked by counting lines.
// RUNWARDEN_DEMO_SLEEP_MS makes a turn take that long first (to land a kill mid-turn).
import fs from "node:fs";

const turn = process.env.RUNWARDEN_TURN ?? "?";
const sleepMs = Number(process.env.RUNWARDEN_DEMO_SLEEP_MS ?? 0);
if (sleepMs > 0) await new Promise((r) => setTimeout(r, sleepMs));
const line = JSON.stringify({ turn: Number(turn), run: process.env.RUNWARDEN_RUN_ID ?? null, session: process.env.RUNWARDEN_SESSION_ID ?? null, at: new Date().toISOString() });
const fd = fs.openSync("runwarden-demo-marker.txt", "a");
fs.writeSync(fd, `${line}\n`);
fs.fsyncSync(fd);
fs.closeSync(fd);
process.stdout.write(`demo agent: turn ${turn} done (${(process.env.RUNWARDEN_PROMPT ?? "").slice(0, 80)})\n`);
