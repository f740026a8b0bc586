"use client";

import { useState } from "react";
import { inputClass } from "./ui";

/**
 * A free-text filter that applies on Enter or when focus leaves it (not on every
 * keystroke, which would push a URL per letter and refetch each time).
 */
export function TextFilter({
  id,
  label,
  value,
  onApply,
  placeholder,
  list,
  options,
  maxLength,
}: {
  id: string;
  label: string;
  value: string | null;
  onApply: (value: string | null) => void;
  placeholder?: string;
  list?: string;
  options?: string[];
  /** The server's limit for this filter (server/shared/limits.ts). */
  maxLength: number;
}) {
  // Keyed by the applied value so a change elsewhere (clear, back button) resets the draft.
  return <Draft key={value ?? ""} id={id} label={label} value={value} onApply={onApply} placeholder={placeholder} list={list} options={options} maxLength={maxLength} />;
}

function Draft({ id, label, value, onApply, placeholder, list, options, maxLength }: Parameters<typeof TextFilter>[0]) {
  const [draft, setDraft] = useState(value ?? "");
  const apply = () => {
    const next = draft.trim() || null;
    if (next !== (value ?? null)) onApply(next);
  };
  return (
    <div className="flex flex-col gap-1">
      <label htmlFor={id} className="text-xs font-medium text-zinc-700 dark:text-zinc-300">
        {label}
      </label>
      <input
        id={id}
        type="search"
        value={draft}
        placeholder={placeholder}
        list={list}
        maxLength={maxLength}
        onChange={(e) => setDraft(e.target.value)}
        onBlur={apply}
        onKeyDown={(e) => {
          if (e.key === "Enter") {
            e.preventDefault();
            apply();
          }
        }}
        className={`${inputClass} w-44`}
      />
      {list && options ? (
        <datalist id={list}>
          {options.map((o) => (
            <option key={o} value={o} />
          ))}
        </datalist>
      ) : null}
    </div>
  );
}

export function SelectFilter<T extends string>({
  id,
  label,
  value,
  options,
  onChange,
  allLabel = "All",
}: {
  id: string;
  label: string;
  value: T | null;
  options: ReadonlyArray<{ value: T; label: string }>;
  onChange: (value: T | null) => void;
  allLabel?: string;
}) {
  return (
    <div className="flex flex-col gap-1">
      <label htmlFor={id} className="text-xs font-medium text-zinc-700 dark:text-zinc-300">
        {label}
      </label>
      <select
        id={id}
        value={value ?? ""}
        onChange={(e) => {
          const v = e.target.value;
          onChange(v === "" ? null : (options.find((o) => o.value === v)?.value ?? null));
        }}
        className={inputClass}
      >
        <option value="">{allLabel}</option>
        {options.map((o) => (
          <option key={o.value} value={o.value}>
            {o.label}
          </option>
        ))}
      </select>
    </div>
  );
}
