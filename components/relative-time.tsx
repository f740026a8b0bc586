"use client";

import { useSyncExternalStore } from "react";

/**
 * One shared clock for relative times, ticking while any is on screen. The server (and
 * hydration) renders the exact UTC time instead, so the markup never disagrees.
 */
let now = 0;
let timer: ReturnType<typeof setInterval> | null = null;
const listeners = new Set<() => void>();

function subscribe(listener: () => void) {
  now = Date.now();
  listeners.add(listener);
  timer ??= setInterval(() => {
    now = Date.now();
    for (const l of listeners) l();
  }, 5_000);
  return () => {
    listeners.delete(listener);
    if (listeners.size === 0 && timer) {
      clearInterval(timer);
      timer = null;
    }
  };
}

const clientNow = () => now || null;
const serverNow = () => null;

export function useNow(): number | null {
  return useSyncExternalStore(subscribe, clientNow, serverNow);
}

export function formatDuration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
  return `${Math.floor(s / 86_400)}d ${Math.floor((s % 86_400) / 3600)}h`;
}

/** "3m ago" / "in 5m", with the exact time on hover. */
export function RelativeTime({ date }: { date: Date | null | undefined }) {
  const current = useNow();
  if (!date) return <span className="text-zinc-600 dark:text-zinc-400">—</span>;
  const iso = date.toISOString();
  let text: string;
  if (current === null) {
    text = `${iso.slice(0, 19).replace("T", " ")} UTC`;
  } else {
    const diff = (current - date.getTime()) / 1000;
    text = Math.abs(diff) < 1 ? "now" : diff > 0 ? `${formatDuration(diff)} ago` : `in ${formatDuration(-diff)}`;
  }
  return (
    <time dateTime={iso} title={iso} className="whitespace-nowrap tabular-nums">
      {text}
    </time>
  );
}
