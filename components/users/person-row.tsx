"use client";

import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { toast } from "../toast";
import { ROLES, type Role } from "@/server/shared/roles";
import { useTRPC } from "@/trpc/react";
import type { RouterOutputs } from "@/trpc/types";
import { Badge, buttonClass, ErrorNotice, inputClass, RelativeTime, tdClass } from "../ui";
import { ConfirmDialog as Confirm } from "../confirm-dialog";

type Person = RouterOutputs["users"]["list"][number];
type Panel = { kind: "none" } | { kind: "edit" } | { kind: "password"; password: string };

/** "co-1, co-2" → ["co-1", "co-2"]; "*" means every company. */
export function parseCompanies(text: string): string[] {
  return [...new Set(text.split(",").map((c) => c.trim()).filter(Boolean))];
}

/**
 * One person in the table, with what an admin may do to them: edit role and companies,
 * disable / enable, reset the password (shown once). Disable and reset ask first. What they
 * may not touch (people holding a company the admin does not) says so instead.
 */
export function PersonRow({ person, columns }: { person: Person; columns: number }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [panel, setPanel] = useState<Panel>({ kind: "none" });
  const refresh = () => queryClient.invalidateQueries(trpc.users.list.queryFilter());
  const disable = useMutation(trpc.users.disable.mutationOptions({ onSuccess: (p) => toast.success(`Disabled ${p.email}; their sessions have ended.`), onSettled: refresh }));
  const enable = useMutation(trpc.users.enable.mutationOptions({ onSuccess: (p) => toast.success(`Enabled ${p.email}.`), onSettled: refresh }));
  const reset = useMutation(trpc.users.resetPassword.mutationOptions({ onSuccess: (r) => setPanel({ kind: "password", password: r.password }), onSettled: refresh }));
  const update = useMutation(
    trpc.users.update.mutationOptions({
      onSuccess: (p) => {
        toast.success(`Updated ${p.email}.`);
        setPanel({ kind: "none" });
      },
      onSettled: refresh,
    }),
  );
  const busy = disable.isPending || enable.isPending || reset.isPending || update.isPending;
  const failed = [
    disable.isError ? { title: `${person.email} was not disabled.`, error: disable.error } : null,
    enable.isError ? { title: `${person.email} was not enabled.`, error: enable.error } : null,
    reset.isError ? { title: `The password of ${person.email} was not reset.`, error: reset.error } : null,
    update.isError ? { title: `${person.email} was not changed.`, error: update.error } : null,
  ].filter((f) => f !== null);
  const clearErrors = () => [disable, enable, reset, update].forEach((m) => m.reset());

  return (
    <>
      <tr data-user-email={person.email} className={person.disabledAt ? "text-zinc-500 dark:text-zinc-400" : undefined}>
        <td className={`${tdClass} break-all`}>
          {person.email}
          {person.self ? <span className="ml-1 text-xs text-zinc-600 dark:text-zinc-400">(you)</span> : null}
        </td>
        <td className={tdClass}>{person.name}</td>
        <td className={tdClass}>
          <Badge tone={person.role === "admin" || person.role === "operator" ? "info" : "neutral"}>{person.role}</Badge>
        </td>
        <td className={`${tdClass} font-mono text-xs`}>{person.companies.includes("*") ? "all companies (*)" : person.companies.join(", ") || "none"}</td>
        <td className={tdClass} data-testid="person-status">
          {person.disabledAt ? (
            <Badge tone="bad" title={`disabled ${new Date(person.disabledAt).toISOString()}`}>
              disabled
            </Badge>
          ) : (
            <Badge tone="good">active</Badge>
          )}
        </td>
        <td className={tdClass}>
          <RelativeTime date={person.createdAt} />
        </td>
        <td className={tdClass}>
          {person.manageable ? (
            <div className="flex flex-wrap gap-2">
              <button
                type="button"
                className={buttonClass.secondary}
                disabled={busy}
                aria-expanded={panel.kind === "edit"}
                onClick={() => {
                  clearErrors();
                  setPanel(panel.kind === "edit" ? { kind: "none" } : { kind: "edit" });
                }}
              >
                Edit
              </button>
              {person.disabledAt ? (
                <button type="button" className={buttonClass.secondary} disabled={busy} onClick={() => (clearErrors(), enable.mutate({ user: person.id }))}>
                  {enable.isPending ? "Enabling…" : "Enable"}
                </button>
              ) : person.self ? null : (
                <Confirm
                  trigger={disable.isPending ? "Disabling…" : "Disable"}
                  title={`Disable ${person.email}?`}
                  confirm="Disable now"
                  disabled={busy}
                  onConfirm={() => (clearErrors(), disable.mutate({ user: person.id }))}
                >
                  They can no longer sign in, and every session they have open ends at once. You can enable them again later.
                </Confirm>
              )}
              <Confirm
                trigger={reset.isPending ? "Resetting…" : "Reset password"}
                title={`Reset the password of ${person.email}?`}
                confirm="Reset password"
                disabled={busy}
                onConfirm={() => (clearErrors(), reset.mutate({ user: person.id }))}
              >
                Their current password stops working{person.self ? "" : " and their sessions end"}. A new password is shown to you once; hand it over safely.
              </Confirm>
            </div>
          ) : (
            <span className="text-xs text-zinc-600 dark:text-zinc-400" title="They hold a company you do not administer">
              outside your companies
            </span>
          )}
        </td>
      </tr>
      {panel.kind !== "none" || failed.length > 0 ? (
        <tr data-testid="person-panel" data-user-email-panel={person.email}>
          <td colSpan={columns} className="bg-zinc-50 px-2 py-3 dark:bg-zinc-900">
            <div className="flex max-w-3xl flex-col gap-3">
              {failed.map((f) => (
                <ErrorNotice key={f.title} title={f.title} error={f.error} />
              ))}
              {panel.kind === "edit" ? <EditPerson person={person} pending={update.isPending} onCancel={() => setPanel({ kind: "none" })} onSave={(v) => update.mutate({ user: person.id, ...v })} /> : null}
              {panel.kind === "password" ? <NewPassword email={person.email} password={panel.password} onDone={() => setPanel({ kind: "none" })} /> : null}
            </div>
          </td>
        </tr>
      ) : null}
    </>
  );
}


function EditPerson({ person, pending, onCancel, onSave }: { person: Person; pending: boolean; onCancel: () => void; onSave: (v: { role: Role; companies: string[] }) => void }) {
  const [role, setRole] = useState<Role>(ROLES.find((r) => r === person.role) ?? "viewer");
  const [companies, setCompanies] = useState(person.companies.join(", "));
  const id = `edit-${person.id}`;
  return (
    <form
      className="grid gap-3 sm:grid-cols-[auto_1fr_auto] sm:items-end"
      aria-label={`Edit ${person.email}`}
      onSubmit={(e) => {
        e.preventDefault();
        if (!pending) onSave({ role, companies: parseCompanies(companies) });
      }}
    >
      <div className="flex flex-col gap-1">
        <label htmlFor={`${id}-role`} className="text-sm font-medium">
          Role of {person.email}
        </label>
        <select id={`${id}-role`} className={inputClass} value={role} onChange={(e) => setRole(ROLES.find((r) => r === e.target.value) ?? "viewer")}>
          {ROLES.map((r) => (
            <option key={r} value={r}>
              {r}
            </option>
          ))}
        </select>
      </div>
      <div className="flex flex-col gap-1">
        <label htmlFor={`${id}-companies`} className="text-sm font-medium">
          Companies of {person.email}
        </label>
        <input id={`${id}-companies`} required maxLength={2000} autoComplete="off" className={`${inputClass} font-mono`} value={companies} onChange={(e) => setCompanies(e.target.value)} />
      </div>
      <div className="flex gap-2">
        <button type="submit" className={buttonClass.primary} disabled={pending}>
          {pending ? "Saving…" : "Save"}
        </button>
        <button type="button" className={buttonClass.secondary} onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

function NewPassword({ email, password, onDone }: { email: string; password: string; onDone: () => void }) {
  return (
    <div role="status" className="rounded border border-amber-300 bg-amber-50 p-4 text-sm text-amber-950 dark:border-amber-800 dark:bg-amber-950 dark:text-amber-50" data-testid="password-reset">
      <p className="font-medium">New password for {email}.</p>
      <p className="mt-2">
        <strong>It will not be shown again.</strong> Copy it now and hand it over safely; Runwarden keeps only a hash of it.
      </p>
      <div className="mt-2 flex flex-wrap items-center gap-2">
        <label htmlFor={`new-password-${email}`} className="font-medium">
          Password
        </label>
        <input id={`new-password-${email}`} readOnly value={password} onFocus={(e) => e.currentTarget.select()} className={`${inputClass} w-64 font-mono`} data-testid="reset-password-value" />
        <button
          type="button"
          className={buttonClass.secondary}
          onClick={() =>
            navigator.clipboard.writeText(password).then(
              () => toast.success("Password copied."),
              () => toast.error("Could not copy: select the password and copy it by hand."),
            )
          }
        >
          Copy
        </button>
        <button type="button" className={buttonClass.secondary} onClick={onDone}>
          Done
        </button>
      </div>
    </div>
  );
}
