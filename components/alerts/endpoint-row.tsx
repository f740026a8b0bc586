"use client";

import { useMutation, useQueryClient } from "@tanstack/react-query";
import dynamic from "next/dynamic";
import { useState } from "react";
import { toast } from "../toast";
import { isAlertEventType } from "@/server/shared/alerts";
import { useTRPC } from "@/trpc/react";
import type { RouterOutputs } from "@/trpc/types";
import { Badge, buttonClass, ErrorNotice, tdClass } from "../ui";
import { EndpointForm } from "./endpoint-form";

type Endpoint = RouterOutputs["alerts"]["list"][number];

const loadDeleteDialog = () => import("./delete-dialog");
const DeleteEndpointDialog = dynamic(() => loadDeleteDialog().then((m) => m.DeleteEndpointDialog), { ssr: false });

/** One endpoint with its actions: test, log, edit, enable/disable, delete (confirmed). */
export function EndpointRow({
  endpoint: e,
  columns,
  selected,
  onShowLog,
  onSecret,
  onDeleted,
}: {
  endpoint: Endpoint;
  columns: number;
  selected: boolean;
  onShowLog: () => void;
  onSecret: (secret: string) => void;
  onDeleted: () => void;
}) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [editing, setEditing] = useState(false);
  const [confirming, setConfirming] = useState(false);
  const [dialogLoaded, setDialogLoaded] = useState(false);
  const refresh = () => {
    void queryClient.invalidateQueries(trpc.alerts.list.queryFilter());
    void queryClient.invalidateQueries(trpc.alerts.deliveries.queryFilter());
  };
  const test = useMutation(
    trpc.alerts.test.mutationOptions({
      onSuccess: () => {
        toast.success(`Test alert queued for ${e.name}; the log shows its delivery.`);
        onShowLog();
      },
      onSettled: refresh,
    }),
  );
  const toggle = useMutation(trpc.alerts.setEnabled.mutationOptions({ onSettled: refresh }));
  const update = useMutation(
    trpc.alerts.update.mutationOptions({
      onSuccess: (result) => {
        setEditing(false);
        toast.success(`Saved ${result.endpoint.name}.`);
        if (result.secret) onSecret(result.secret);
      },
      onSettled: refresh,
    }),
  );
  const remove = useMutation(
    trpc.alerts.delete.mutationOptions({
      onSuccess: () => {
        setConfirming(false);
        toast.success(`Deleted ${e.name}.`);
        onDeleted();
      },
      onSettled: refresh,
    }),
  );
  const error = test.error ?? toggle.error ?? remove.error;
  return (
    <>
      <tr className={selected ? "bg-blue-50 dark:bg-blue-950" : undefined} data-testid="endpoint-row">
        <td className={tdClass}>
          <span className="font-medium">{e.name}</span>
          {e.source === "env" ? (
            <span className="ml-2">
              <Badge tone="info" title="Set by RUNWARDEN_ALERT_WEBHOOK_URL at controller start">
                env
              </Badge>
            </span>
          ) : null}
        </td>
        <td className={`${tdClass} max-w-xs font-mono text-xs break-all`} title="The URL is the endpoint's credential: only its host and a fingerprint are shown">
          {e.destination}
        </td>
        <td className={`${tdClass} text-xs`}>{e.events.length === 0 ? "every type but the opt-in ones" : e.events.join(", ")}</td>
        <td className={`${tdClass} font-mono text-xs`}>{e.secretHint}</td>
        <td className={tdClass}>{e.enabled ? <Badge tone="good">enabled</Badge> : <Badge tone="warn">disabled</Badge>}</td>
        <td className={`${tdClass} text-xs whitespace-nowrap`}>
          {e.deliveries.delivered} delivered · {e.deliveries.pending} pending ·{" "}
          <span className={e.deliveries.failed > 0 ? "font-semibold text-red-700 dark:text-red-300" : undefined}>{e.deliveries.failed} failed</span>
        </td>
        <td className={tdClass}>
          <div className="flex flex-wrap gap-2">
            <button type="button" className={buttonClass.secondary} disabled={test.isPending} onClick={() => test.mutate({ id: e.id })} aria-label={`Test ${e.name}`}>
              {test.isPending ? "Sending…" : "Test"}
            </button>
            <button type="button" className={buttonClass.secondary} onClick={onShowLog} aria-pressed={selected} aria-label={`Delivery log of ${e.name}`}>
              Log
            </button>
            <button type="button" className={buttonClass.secondary} onClick={() => setEditing((v) => !v)} aria-expanded={editing} aria-label={`Edit ${e.name}`}>
              Edit
            </button>
            <button type="button" className={buttonClass.secondary} disabled={toggle.isPending} onClick={() => toggle.mutate({ id: e.id, enabled: !e.enabled })} aria-label={`${e.enabled ? "Disable" : "Enable"} ${e.name}`}>
              {e.enabled ? "Disable" : "Enable"}
            </button>
            <button
              type="button"
              className={buttonClass.danger}
              onPointerEnter={() => void loadDeleteDialog()}
              onClick={() => {
                setDialogLoaded(true);
                setConfirming(true);
              }}
              aria-label={`Delete ${e.name}`}
            >
              Delete
            </button>
          </div>
          {error ? <ErrorNotice title="That did not work." error={error} /> : null}
          {dialogLoaded ? (
            <DeleteEndpointDialog open={confirming} onOpenChange={(o) => !remove.isPending && setConfirming(o)} name={e.name} destination={e.destination} pending={remove.isPending} onConfirm={() => remove.mutate({ id: e.id })} />
          ) : null}
        </td>
      </tr>
      {editing ? (
        <tr>
          <td colSpan={columns} className="bg-zinc-50 p-4 dark:bg-zinc-900">
            <EndpointForm
              idPrefix={`edit-${e.id}`}
              initial={{ name: e.name, url: "", secret: "", events: e.events.filter(isAlertEventType) }}
              submitLabel="Save"
              pending={update.isPending}
              urlHelp={e.source === "env" ? null : `Now ${e.destination}. Leave it empty to keep it; the whole URL is never shown again.`}
              secretHelp={e.source === "env" ? "This endpoint's URL and secret come from the controllers' environment and are set again at their next start." : "Leave it empty to keep the current secret."}
              onSubmit={(v) => update.mutate({ id: e.id, name: v.name.trim(), events: v.events, ...(v.url.trim() !== "" ? { url: v.url.trim() } : {}), ...(v.secret !== "" ? { secret: v.secret } : {}) })}
              onCancel={() => setEditing(false)}
            />
            {update.isError ? <ErrorNotice title="Not saved." error={update.error} /> : null}
          </td>
        </tr>
      ) : null}
    </>
  );
}
