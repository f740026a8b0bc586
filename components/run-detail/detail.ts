import type { RouterOutputs } from "@/trpc/types";

/** What the run page shows: `runs.get` (server/runs/detail.ts). */
export type Detail = RouterOutputs["runs"]["get"];
