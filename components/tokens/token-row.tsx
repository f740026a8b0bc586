"use client";

import { useMutation, useQueryClient } from "@tanstack/react-query";
import { toast } from "../toast";
import { useTRPC } from "@/trpc/react";
import type { RouterOutputs } from "@/trpc/types";
import { Badge, ErrorNotice, RelativeTime, tdClass, type Tone } from "../ui";
import { ConfirmDialog } from "../confirm-dialog";

type TokenSummary = RouterOutputs["tokens"]["list"][number];

const STATE_TONE: Record<TokenSummary["state"], Tone> = { active: "good", expired: "warn", revoked: "bad" };

/** One API token in the table: never its secret, only its prefix; Revoke asks first. */
export function TokenRow({ token, columns }: { token: TokenSummary; columns: number }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const revoke = useMutation(
    trpc.tokens.revoke.mutationOptions({
      onSuccess: (r) => toast.success(r.changed ? `Revoked ${r.summary.name}: its next request is refused.` : `${r.summary.name} was already revoked.`),
      onSettled: () => queryClient.invalidateQueries(trpc.tokens.list.queryFilter()),
    }),
  );
  return (
    <>
      <tr data-token-name={token.name} className={token.state === "active" ? undefined : "text-zinc-600 dark:text-zinc-400"}>
        <td className={`${tdClass} break-all`}>{token.name}</td>
        <td className={`${tdClass} font-mono text-xs whitespace-nowrap`} data-testid="token-prefix">
          {token.prefix}…
        </td>
        <td className={tdClass}>
          <Badge tone={token.role === "operator" ? "info" : "neutral"}>{token.role}</Badge>
        </td>
        <td className={`${tdClass} font-mono text-xs`}>{token.companies.includes("*") ? "all companies (*)" : token.companies.join(", ")}</td>
        <td className={tdClass}>
          <span className="break-all">{token.createdBy}</span>
          <br />
          <RelativeTime date={token.createdAt} />
        </td>
        <td className={tdClass} data-testid="token-last-used">
          {token.lastUsedAt ? (
            <>
              <RelativeTime date={token.lastUsedAt} />
              {token.lastUsedIp ? <span className="block font-mono text-xs">{token.lastUsedIp}</span> : null}
            </>
          ) : (
            <span className="text-zinc-600 dark:text-zinc-400">never</span>
          )}
        </td>
        <td className={tdClass}>
          <RelativeTime date={token.expiresAt} />
        </td>
        <td className={tdClass} data-testid="token-state">
          <Badge tone={STATE_TONE[token.state]} title={token.revokedAt ? `revoked ${token.revokedAt.toISOString()}${token.revokedBy ? ` by ${token.revokedBy}` : ""}` : undefined}>
            {token.state}
          </Badge>
        </td>
        <td className={tdClass}>{token.state === "revoked" ? null : <ConfirmRevoke name={token.name} pending={revoke.isPending} onConfirm={() => (revoke.reset(), revoke.mutate({ id: token.id }))} />}</td>
      </tr>
      {revoke.isError ? (
        <tr>
          <td colSpan={columns} className="bg-zinc-50 px-2 py-3 dark:bg-zinc-900">
            <ErrorNotice title={`${token.name} was not revoked.`} error={revoke.error} />
          </td>
        </tr>
      ) : null}
    </>
  );
}

function ConfirmRevoke({ name, pending, onConfirm }: { name: string; pending: boolean; onConfirm: () => void }) {
  return (
    <ConfirmDialog trigger={pending ? "Revoking…" : "Revoke"} title={`Revoke the token ${name}?`} confirm="Revoke now" disabled={pending} onConfirm={onConfirm}>
      Its next request is refused, and a program still using it stops working. A revoked token cannot be brought back: make a new one instead.
    </ConfirmDialog>
  );
}
