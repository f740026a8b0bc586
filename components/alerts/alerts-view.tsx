"use client";

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { parseAsString, useQueryState } from "nuqs";
import { useState } from "react";
import { toast } from "../toast";
import { useTRPC } from "@/trpc/react";
import { buttonClass, Empty, ErrorNotice, inputClass, Loading, Section, tableClass, TableHead, TableWrap } from "../ui";
import { DeliveryLog } from "./delivery-log";
import { EndpointForm } from "./endpoint-form";
import { EndpointRow } from "./endpoint-row";

const COLUMNS = ["Name", "URL", "Events", "Secret", "Status", "Deliveries", "Actions"] as const;

export function AlertsView() {
  const trpc = useTRPC();
  const endpoints = useQuery(trpc.alerts.list.queryOptions(undefined, { refetchInterval: 10_000 }));
  // The endpoint whose log is shown: in the URL, so it survives a reload and can be shared.
  const [selected, setSelected] = useQueryState("endpoint", parseAsString.withOptions({ history: "push" }));
  const [secret, setSecret] = useState<{ name: string; secret: string } | null>(null);
  const chosen = endpoints.data?.find((e) => e.id === selected) ?? null;
  return (
    <>
      <Section title="Endpoints" id="endpoints">
        {endpoints.isPending ? (
          <Loading label="Loading endpoints…" />
        ) : endpoints.isError ? (
          <ErrorNotice title="Could not list the endpoints." error={endpoints.error} />
        ) : endpoints.data.length === 0 ? (
          <Empty>No endpoint yet: nothing is sent. Add one below, or set RUNWARDEN_ALERT_WEBHOOK_URL for the controllers.</Empty>
        ) : (
          <TableWrap label="Alert endpoints">
            <table className={tableClass} data-testid="endpoints-table">
              <TableHead columns={COLUMNS} />
              <tbody className="divide-y divide-zinc-100 dark:divide-zinc-800">
                {endpoints.data.map((e) => (
                  <EndpointRow
                    key={e.id}
                    endpoint={e}
                    columns={COLUMNS.length}
                    selected={e.id === selected}
                    onShowLog={() => void setSelected(e.id)}
                    onSecret={(s) => setSecret({ name: e.name, secret: s })}
                    onDeleted={() => {
                      if (e.id === selected) void setSelected(null);
                    }}
                  />
                ))}
              </tbody>
            </table>
          </TableWrap>
        )}
      </Section>
      {secret ? <SecretNotice name={secret.name} secret={secret.secret} onDone={() => setSecret(null)} /> : null}
      {chosen ? (
        <Section title={`Delivery log: ${chosen.name}`} id="delivery-log">
          <DeliveryLog endpointId={chosen.id} />
        </Section>
      ) : null}
      <Section title="Add an endpoint" id="add-endpoint">
        <AddEndpoint onSecret={(name, s) => setSecret({ name, secret: s })} onAdded={(id) => void setSelected(id)} />
      </Section>
    </>
  );
}

function AddEndpoint({ onSecret, onAdded }: { onSecret: (name: string, secret: string) => void; onAdded: (id: string) => void }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [formKey, setFormKey] = useState(0);
  const create = useMutation(
    trpc.alerts.create.mutationOptions({
      onSuccess: (result) => {
        toast.success(`Added the endpoint ${result.endpoint.name}.`);
        if (result.secret) onSecret(result.endpoint.name, result.secret);
        onAdded(result.endpoint.id);
        setFormKey((k) => k + 1);
      },
      onSettled: () => queryClient.invalidateQueries(trpc.alerts.list.queryFilter()),
    }),
  );
  return (
    <div className="flex flex-col gap-3">
      <EndpointForm
        key={formKey}
        idPrefix="new-endpoint"
        initial={{ name: "", url: "", secret: "", events: [] }}
        submitLabel="Add endpoint"
        pending={create.isPending}
        secretHelp="Leave it empty and one is generated (whsec_…) and shown once. Slack's incoming webhooks ignore the signature; your own receiver should check it."
        onSubmit={(v) => create.mutate({ name: v.name.trim(), url: v.url.trim(), secret: v.secret === "" ? undefined : v.secret, events: v.events })}
      />
      {create.isError ? <ErrorNotice title="The endpoint was not added." error={create.error} /> : null}
    </div>
  );
}

function SecretNotice({ name, secret, onDone }: { name: string; secret: string; onDone: () => void }) {
  return (
    <div role="status" className="mb-6 max-w-3xl rounded border border-amber-300 bg-amber-50 p-4 text-sm text-amber-950 dark:border-amber-800 dark:bg-amber-950 dark:text-amber-50" data-testid="endpoint-secret">
      <p className="font-medium">
        The signing secret of {name} — <strong>it will not be shown again</strong>; the list shows only a fingerprint of it.
      </p>
      <div className="mt-2 flex flex-wrap items-center gap-2">
        <label htmlFor="endpoint-secret-value" className="font-medium">
          Secret
        </label>
        <input id="endpoint-secret-value" readOnly value={secret} onFocus={(e) => e.currentTarget.select()} className={`${inputClass} w-96 max-w-full font-mono`} />
        <button
          type="button"
          className={buttonClass.secondary}
          onClick={() =>
            navigator.clipboard.writeText(secret).then(
              () => toast.success("Secret copied."),
              () => toast.error("Could not copy: select the secret and copy it by hand."),
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
