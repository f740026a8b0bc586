"use client";

import { inputClass } from "./ui";

/** `YYYY-MM-DDTHH:mm` in local time, as a datetime-local input wants it. */
export function toLocalInput(d: Date | null): string {
  if (!d) return "";
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

export function fromLocalInput(v: string): Date | null {
  if (!v) return null;
  const d = new Date(v);
  return Number.isNaN(d.getTime()) ? null : d;
}

/** A moment filter in the viewer's local time (the address keeps it as UTC). */
export function DateTimeFilter({ id, label, value, onChange }: { id: string; label: string; value: Date | null; onChange: (value: Date | null) => void }) {
  return (
    <div className="flex flex-col gap-1">
      <label htmlFor={id} className="text-xs font-medium text-zinc-700 dark:text-zinc-300">
        {label}
      </label>
      <input id={id} type="datetime-local" className={inputClass} value={toLocalInput(value)} onChange={(e) => onChange(fromLocalInput(e.target.value))} />
    </div>
  );
}
