"use client";

import { useState } from "react";
import { ALERT_EVENT_TYPES, type AlertEventType } from "@/server/shared/alerts";
import { buttonClass, inputClass } from "../ui";

export interface EndpointFormValues {
  name: string;
  url: string;
  /** Empty: keep (edit) or generate (add). */
  secret: string;
  events: AlertEventType[];
}

const EVENT_HELP: Record<AlertEventType, string> = {
  "run.failed": "a run ended failed (code, owner, Retry, link)",
  "run.recovery_exhausted": "recovery gave up on a run",
  "run.succeeded": "a run ended succeeded (opt-in: only when ticked)",
  "run.cancelled": "a run was cancelled (opt-in: only when ticked)",
  "provider.outage_started": "the provider became unavailable",
  "provider.outage_ended": "the provider is back",
  "orphans.cost_over": "orphaned sandboxes cost more than RUNWARDEN_ALERT_ORPHAN_COST_PER_HOUR",
  "wave.failed": "a chaos wave failed",
  "forecast.missed": "a restart did not do what its stored forecast said",
  test: "the Test button (always delivered)",
};

/** Add or edit an endpoint: name, URL, secret (optional), the event types (none ticked: every type but the opt-in ones). */
export function EndpointForm({
  idPrefix,
  initial,
  submitLabel,
  pending,
  secretHelp,
  urlHelp,
  onSubmit,
  onCancel,
}: {
  idPrefix: string;
  initial: EndpointFormValues;
  submitLabel: string;
  pending: boolean;
  secretHelp: string;
  /**
   * Editing: what is said under the URL (it starts empty: the whole URL is never sent back, so
   * an empty one keeps it); null: the URL cannot be changed here (the `env` endpoint's).
   * Adding: undefined.
   */
  urlHelp?: string | null;
  onSubmit: (values: EndpointFormValues) => void;
  onCancel?: () => void;
}) {
  const [values, setValues] = useState(initial);
  const set = (patch: Partial<EndpointFormValues>) => setValues((v) => ({ ...v, ...patch }));
  const id = (s: string) => `${idPrefix}-${s}`;
  return (
    <form
      className="grid max-w-3xl gap-4 sm:grid-cols-2"
      onSubmit={(e) => {
        e.preventDefault();
        if (!pending) onSubmit(values);
      }}
    >
      <div className="flex flex-col gap-1">
        <label htmlFor={id("name")} className="text-sm font-medium">
          Name
        </label>
        <input id={id("name")} required maxLength={100} autoComplete="off" className={inputClass} value={values.name} onChange={(e) => set({ name: e.target.value })} />
      </div>
      <div className="flex flex-col gap-1">
        <label htmlFor={id("url")} className="text-sm font-medium">
          URL
        </label>
        <input
          id={id("url")}
          type="url"
          required={urlHelp === undefined}
          disabled={urlHelp === null}
          autoComplete="off"
          className={`${inputClass} font-mono`}
          placeholder={urlHelp === undefined ? "https://hooks.slack.com/services/…" : urlHelp === null ? "set by RUNWARDEN_ALERT_WEBHOOK_URL" : "unchanged"}
          aria-describedby={id("url-help")}
          value={values.url}
          onChange={(e) => set({ url: e.target.value })}
        />
        <p id={id("url-help")} className="text-xs text-zinc-700 dark:text-zinc-300">
          {urlHelp === undefined
            ? "Shown afterwards only as its host and a fingerprint: a webhook URL is its own credential. Internal addresses are refused unless RUNWARDEN_ALERT_ALLOW_NETWORKS allows them."
            : (urlHelp ?? "Set by RUNWARDEN_ALERT_WEBHOOK_URL: change the variable.")}
        </p>
      </div>
      <div className="flex flex-col gap-1 sm:col-span-2">
        <label htmlFor={id("secret")} className="text-sm font-medium">
          Signing secret (optional)
        </label>
        <input
          id={id("secret")}
          type="password"
          autoComplete="new-password"
          className={`${inputClass} font-mono`}
          aria-describedby={id("secret-help")}
          value={values.secret}
          onChange={(e) => set({ secret: e.target.value })}
        />
        <p id={id("secret-help")} className="text-xs text-zinc-700 dark:text-zinc-300">
          {secretHelp}
        </p>
      </div>
      <fieldset className="sm:col-span-2">
        <legend className="text-sm font-medium">Events (none ticked: every type but the opt-in ones)</legend>
        <div className="mt-1 grid gap-1 sm:grid-cols-2">
          {ALERT_EVENT_TYPES.filter((t) => t !== "test").map((t) => (
            <label key={t} className="flex items-start gap-2 text-sm">
              <input
                type="checkbox"
                className="mt-1"
                checked={values.events.includes(t)}
                onChange={(e) => set({ events: e.target.checked ? [...values.events, t] : values.events.filter((x) => x !== t) })}
              />
              <span>
                <span className="font-mono text-xs">{t}</span> — {EVENT_HELP[t]}
              </span>
            </label>
          ))}
        </div>
      </fieldset>
      <div className="flex gap-3 sm:col-span-2">
        <button type="submit" className={buttonClass.primary} disabled={pending}>
          {pending ? "Saving…" : submitLabel}
        </button>
        {onCancel ? (
          <button type="button" className={buttonClass.secondary} onClick={onCancel} disabled={pending}>
            Cancel
          </button>
        ) : null}
      </div>
    </form>
  );
}
