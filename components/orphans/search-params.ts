import { createLoader, parseAsString, parseAsStringLiteral } from "nuqs/server";
import { OWNERSHIP_VERDICTS } from "@/server/shared/confirm";
import type { RouterInputs } from "@/trpc/types";

/** The orphans page's URL state, shared by the server prefetch and the client. */
export const orphansSearchParams = {
  verdict: parseAsStringLiteral(OWNERSHIP_VERDICTS),
  company: parseAsString,
  q: parseAsString,
  /** A later page (the server's signed offset); any filter change clears it. */
  cursor: parseAsString,
};

export const loadOrphansSearchParams = createLoader(orphansSearchParams);

export function toOrphanListInput(v: Awaited<ReturnType<typeof loadOrphansSearchParams>>): RouterInputs["orphans"]["list"] {
  return { verdict: v.verdict ?? undefined, companyId: v.company?.trim() || undefined, search: v.q?.trim() || undefined, cursor: v.cursor ?? undefined };
}
