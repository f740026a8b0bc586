"use client";

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { toast } from "../toast";
import { useTRPC } from "@/trpc/react";
import type { RouterInputs, RouterOutputs } from "@/trpc/types";
import { buttonClass, ErrorNotice, inputClass, ListTable, Section } from "../ui";
import { parseCompanies } from "../users/person-row";
import { TokenRow } from "./token-row";

type Created = RouterOutputs["tokens"]["create"];
type TokenRole = RouterInputs["tokens"]["create"]["role"];

/** The roles a token may hold (server/tokens/schemas.ts TOKEN_ROLES): never admin. */
const TOKEN_ROLES: readonly TokenRole[] = ["viewer", "board", "operator"];
const ROLE_HELP: Record<TokenRole, string> = {
  viewer: "viewer — reads everything of its companies",
  board: "board — viewer, plus Retry and Cancel",
  operator: "operator — board, plus submitting runs, sweeps, reclaim",
};

const COLUMNS = ["Name", "Prefix", "Role", "Companies", "Created", "Last used", "Expires", "State", "Actions"] as const;

export function TokensView() {
  const trpc = useTRPC();
  const tokens = useQuery(trpc.tokens.list.queryOptions());
  return (
    <>
      <Section title="Tokens" id="tokens">
        <ListTable
          query={tokens}
          loading="Loading API tokens…"
          errorTitle="Could not list the API tokens."
          empty="No API tokens yet."
          label="API tokens"
          testId="tokens-table"
          columns={COLUMNS}
          row={(s) => <TokenRow key={s.id} token={s} columns={COLUMNS.length} />}
        />
      </Section>
      <Section title="Create a token" id="create-token">
        <CreateToken />
      </Section>
    </>
  );
}

function CreateToken() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [name, setName] = useState("");
  const [role, setRole] = useState<TokenRole>("viewer");
  const [companies, setCompanies] = useState("");
  const [expiresIn, setExpiresIn] = useState("30d");
  const [created, setCreated] = useState<Created | null>(null);
  const create = useMutation(
    trpc.tokens.create.mutationOptions({
      onSuccess: (result) => {
        setCreated(result);
        setName("");
        setCompanies("");
        setRole("viewer");
        setExpiresIn("30d");
        toast.success(`Created token ${result.summary.name}.`);
      },
      onSettled: () => queryClient.invalidateQueries(trpc.tokens.list.queryFilter()),
    }),
  );

  return (
    <div className="flex flex-col gap-4">
      <form
        className="grid max-w-3xl gap-4 sm:grid-cols-2"
        aria-label="Create an API token"
        onSubmit={(e) => {
          e.preventDefault();
          if (create.isPending) return;
          setCreated(null);
          create.mutate({ name: name.trim(), role, companies: parseCompanies(companies), expiresIn: expiresIn.trim() });
        }}
      >
        <div className="flex flex-col gap-1">
          <label htmlFor="new-token-name" className="text-sm font-medium">
            Name
          </label>
          <input id="new-token-name" required maxLength={80} autoComplete="off" className={inputClass} placeholder="ci deploys" value={name} onChange={(e) => setName(e.target.value)} />
        </div>
        <div className="flex flex-col gap-1">
          <label htmlFor="new-token-role" className="text-sm font-medium">
            Role
          </label>
          <select id="new-token-role" className={inputClass} value={role} onChange={(e) => setRole(TOKEN_ROLES.find((r) => r === e.target.value) ?? "viewer")}>
            {TOKEN_ROLES.map((r) => (
              <option key={r} value={r}>
                {ROLE_HELP[r]}
              </option>
            ))}
          </select>
        </div>
        <div className="flex flex-col gap-1">
          <label htmlFor="new-token-companies" className="text-sm font-medium">
            Companies
          </label>
          <input
            id="new-token-companies"
            required
            autoComplete="off"
            className={`${inputClass} font-mono`}
            placeholder="co-1, co-2"
            aria-describedby="new-token-companies-help"
            value={companies}
            onChange={(e) => setCompanies(e.target.value)}
          />
          <p id="new-token-companies-help" className="text-xs text-zinc-700 dark:text-zinc-300">
            Company ids separated by commas, or <span className="font-mono">*</span> for every company: only companies you hold.
          </p>
        </div>
        <div className="flex flex-col gap-1">
          <label htmlFor="new-token-lifetime" className="text-sm font-medium">
            Lifetime
          </label>
          <input
            id="new-token-lifetime"
            required
            autoComplete="off"
            className={`${inputClass} font-mono`}
            aria-describedby="new-token-lifetime-help"
            value={expiresIn}
            onChange={(e) => setExpiresIn(e.target.value)}
          />
          <p id="new-token-lifetime-help" className="text-xs text-zinc-700 dark:text-zinc-300">
            Days, hours or minutes: <span className="font-mono">30d</span>, <span className="font-mono">12h</span>, <span className="font-mono">90m</span>. Every token expires.
          </p>
        </div>
        <div className="sm:col-span-2">
          <button type="submit" className={buttonClass.primary} disabled={create.isPending}>
            {create.isPending ? "Creating…" : "Create token"}
          </button>
        </div>
      </form>
      {create.isError ? <ErrorNotice title="The token was not created." error={create.error} /> : null}
      {created ? <CreatedNotice created={created} onDone={() => setCreated(null)} /> : null}
    </div>
  );
}

/** The new token, this once: the server keeps only its hash (server/tokens/format.ts). */
function CreatedNotice({ created, onDone }: { created: Created; onDone: () => void }) {
  const s = created.summary;
  const companies = s.companies.includes("*") ? "every company" : s.companies.join(", ");
  return (
    <div role="status" className="max-w-3xl rounded border border-amber-300 bg-amber-50 p-4 text-sm text-amber-950 dark:border-amber-800 dark:bg-amber-950 dark:text-amber-50" data-testid="token-created">
      <p className="font-medium">
        Created token {s.name}: {s.role} of {companies}, expires {s.expiresAt.toISOString().slice(0, 16).replace("T", " ")} UTC.
      </p>
      <p className="mt-2">
        <strong>This token will not be shown again.</strong> Copy it now and store it where the program reads it; Runwarden keeps only a hash of it.
      </p>
      <div className="mt-2 flex flex-wrap items-center gap-2">
        <label htmlFor="created-token" className="font-medium">
          Token
        </label>
        <input id="created-token" readOnly value={created.token} onFocus={(e) => e.currentTarget.select()} className={`${inputClass} w-[32rem] max-w-full font-mono`} data-testid="created-token" />
        <button
          type="button"
          className={buttonClass.secondary}
          onClick={() =>
            navigator.clipboard.writeText(created.token).then(
              () => toast.success("Token copied."),
              () => toast.error("Could not copy: select the token and copy it by hand."),
            )
          }
        >
          Copy
        </button>
      </div>
      <button type="button" className={`${buttonClass.secondary} mt-3`} onClick={onDone}>
        Done
      </button>
    </div>
  );
}
