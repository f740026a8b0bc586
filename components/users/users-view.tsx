"use client";

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { toast } from "../toast";
import { ROLES, type Role } from "@/server/shared/roles";
import { useTRPC } from "@/trpc/react";
import type { RouterOutputs } from "@/trpc/types";
import { buttonClass, ErrorNotice, inputClass, ListTable, Section } from "../ui";
import { parseCompanies, PersonRow } from "./person-row";

export { parseCompanies };

type Added = RouterOutputs["users"]["add"];

const ROLE_HELP: Record<Role, string> = {
  viewer: "viewer — reads everything of their companies",
  board: "board — viewer, plus Retry",
  operator: "operator — board, plus sweeps, reclaim, wave imports",
  admin: "admin — operator, plus managing people",
};

const COLUMNS = ["Email", "Name", "Role", "Companies", "Status", "Added", "Actions"] as const;

export function UsersView() {
  const trpc = useTRPC();
  const users = useQuery(trpc.users.list.queryOptions());
  return (
    <>
      <Section title="People" id="people">
        <ListTable
          query={users}
          loading="Loading people…"
          errorTitle="Could not list the people."
          empty="Nobody can sign in yet."
          label="People who can sign in"
          testId="users-table"
          columns={COLUMNS}
          row={(u) => <PersonRow key={u.id} person={u} columns={COLUMNS.length} />}
        />
      </Section>
      <Section title="Add a person" id="add-person">
        <AddPerson />
      </Section>
    </>
  );
}

function AddPerson() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [email, setEmail] = useState("");
  const [role, setRole] = useState<Role>("viewer");
  const [companies, setCompanies] = useState("");
  const [password, setPassword] = useState("");
  const [added, setAdded] = useState<Added | null>(null);
  const add = useMutation(
    trpc.users.add.mutationOptions({
      onSuccess: (result) => {
        setAdded(result);
        setEmail("");
        setCompanies("");
        setPassword("");
        setRole("viewer");
        toast.success(`Added ${result.email} as ${result.role}.`);
      },
      onSettled: () => queryClient.invalidateQueries(trpc.users.list.queryFilter()),
    }),
  );

  return (
    <div className="flex flex-col gap-4">
      <form
        className="grid max-w-3xl gap-4 sm:grid-cols-2"
        onSubmit={(e) => {
          e.preventDefault();
          if (add.isPending) return;
          setAdded(null);
          add.mutate({ email: email.trim(), role, companies: parseCompanies(companies), password: password === "" ? undefined : password });
        }}
      >
        <div className="flex flex-col gap-1">
          <label htmlFor="new-user-email" className="text-sm font-medium">
            Email
          </label>
          <input id="new-user-email" type="email" required autoComplete="off" className={inputClass} value={email} onChange={(e) => setEmail(e.target.value)} />
        </div>
        <div className="flex flex-col gap-1">
          <label htmlFor="new-user-role" className="text-sm font-medium">
            Role
          </label>
          <select id="new-user-role" className={inputClass} value={role} onChange={(e) => setRole(ROLES.find((r) => r === e.target.value) ?? "viewer")}>
            {ROLES.map((r) => (
              <option key={r} value={r}>
                {ROLE_HELP[r]}
              </option>
            ))}
          </select>
        </div>
        <div className="flex flex-col gap-1">
          <label htmlFor="new-user-companies" className="text-sm font-medium">
            Companies
          </label>
          <input
            id="new-user-companies"
            required
            autoComplete="off"
            className={`${inputClass} font-mono`}
            placeholder="co-1, co-2"
            aria-describedby="new-user-companies-help"
            value={companies}
            onChange={(e) => setCompanies(e.target.value)}
          />
          <p id="new-user-companies-help" className="text-xs text-zinc-700 dark:text-zinc-300">
            Company ids separated by commas, or <span className="font-mono">*</span> for every company.
          </p>
        </div>
        <div className="flex flex-col gap-1">
          <label htmlFor="new-user-password" className="text-sm font-medium">
            Password (optional)
          </label>
          <input
            id="new-user-password"
            type="password"
            autoComplete="new-password"
            className={inputClass}
            aria-describedby="new-user-password-help"
            value={password}
            onChange={(e) => setPassword(e.target.value)}
          />
          <p id="new-user-password-help" className="text-xs text-zinc-700 dark:text-zinc-300">
            At least 10 characters. Leave it empty and one is generated and shown once.
          </p>
        </div>
        <div className="sm:col-span-2">
          <button type="submit" className={buttonClass.primary} disabled={add.isPending}>
            {add.isPending ? "Adding…" : "Add person"}
          </button>
        </div>
      </form>
      {add.isError ? <ErrorNotice title="The person was not added." error={add.error} /> : null}
      {added ? <AddedNotice added={added} onDone={() => setAdded(null)} /> : null}
    </div>
  );
}

function AddedNotice({ added, onDone }: { added: Added; onDone: () => void }) {
  const companies = added.companies.includes("*") ? "every company" : added.companies.join(", ");
  return (
    <div role="status" className="max-w-3xl rounded border border-amber-300 bg-amber-50 p-4 text-sm text-amber-950 dark:border-amber-800 dark:bg-amber-950 dark:text-amber-50" data-testid="user-added">
      <p className="font-medium">
        Added {added.email} as {added.role} of {companies}.
      </p>
      {added.generatedPassword ? (
        <>
          <p className="mt-2">
            <strong>Their password will not be shown again.</strong> Copy it now and hand it over safely; Runwarden keeps only a hash of it.
          </p>
          <div className="mt-2 flex flex-wrap items-center gap-2">
            <label htmlFor="generated-password" className="font-medium">
              Password
            </label>
            <input
              id="generated-password"
              readOnly
              value={added.generatedPassword}
              onFocus={(e) => e.currentTarget.select()}
              className={`${inputClass} w-64 font-mono`}
              data-testid="generated-password"
            />
            <button
              type="button"
              className={buttonClass.secondary}
              onClick={() =>
                navigator.clipboard.writeText(added.generatedPassword ?? "").then(
                  () => toast.success("Password copied."),
                  () => toast.error("Could not copy: select the password and copy it by hand."),
                )
              }
            >
              Copy
            </button>
          </div>
        </>
      ) : (
        <p className="mt-2">They sign in with the password you chose.</p>
      )}
      <button type="button" className={`${buttonClass.secondary} mt-3`} onClick={onDone}>
        Done
      </button>
    </div>
  );
}
