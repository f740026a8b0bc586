import { createLoader, parseAsString, parseAsStringLiteral } from "nuqs/server";
import type { RouterInputs } from "@/trpc/types";

type ListInput = RouterInputs["intents"]["list"];

export const INTENT_STATUSES = ["pending", "committed", "reclaimed", "resolved_absent", "manual_reconciliation", "all"] as const satisfies ReadonlyArray<NonNullable<ListInput["status"]>>;

/** The intents page's URL state, shared by the server prefetch and the client. */
export const intentsSearchParams = {
  status: parseAsStringLiteral(INTENT_STATUSES).withDefault("pending"),
  company: parseAsString,
  q: parseAsString,
  cursor: parseAsString,
};

export const loadIntentsSearchParams = createLoader(intentsSearchParams);

export function toIntentListInput(v: Awaited<ReturnType<typeof loadIntentsSearchParams>>): ListInput {
  return { status: v.status, companyId: v.company?.trim() || undefined, search: v.q?.trim() || undefined, cursor: v.cursor ?? undefined, pageSize: 50 };
}
