import { Field, RelativeTime } from "../ui";
import type { Detail } from "./detail";

/** The run's facts at a glance: who, what, where, how far, when. */
export function RunFields({ detail: d }: { detail: Detail }) {
  return (
    <dl className="mt-6 grid grid-cols-2 gap-4 sm:grid-cols-3 lg:grid-cols-6">
      <Field label="Company">
        <span className="font-mono">{d.run.companyId}</span>
      </Field>
      <Field label="Task">
        <span className="font-mono">{d.run.taskId}</span>
      </Field>
      <Field label="Agent">{d.run.agent}</Field>
      <Field label="Provider / target">
        {d.run.provider} / {d.run.target}
      </Field>
      <Field label="Sandbox mode">{d.run.sandboxMode}</Field>
      <Field label="Owner">{d.run.owner}</Field>
      <Field label="Provider attempts">
        {d.run.providerAttempts} of {d.run.maxProviderAttempts}
      </Field>
      <Field label="Turns">
        {d.run.turnsDone} of {d.run.turnsPlanned}
      </Field>
      <Field label="Restarts crossed">{d.run.restarts}</Field>
      <Field label="Recovery">{[d.run.recoveryMode, d.run.recoveryState].filter(Boolean).join(" · ") || "—"}</Field>
      <Field label="Created">
        <RelativeTime date={d.run.createdAt} />
      </Field>
      <Field label="Finished">
        <RelativeTime date={d.run.finishedAt} />
      </Field>
    </dl>
  );
}
