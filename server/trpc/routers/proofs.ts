import { z } from "zod";
import { safeDecide, verdictSchema, type EvidenceInput } from "../../engine";
import { AppError } from "../../errors";
import { createTRPCRouter, viewerProcedure } from "../trpc";

/**
 * The bundle is validated by the engine, not by tRPC's input parser, so the message names
 * the field exactly as `runwarden decide` does (`evidence.claim.remote.providerLeaseId: …`).
 * The custom schema only carries the bundle's type to clients.
 */
const evidenceInput = z.custom<EvidenceInput>();

export const proofsRouter = createTRPCRouter({
  /** Evaluate an evidence bundle (docs/evidence.md) and return the verdict with every check. */
  // Pure: it reads nothing stored, so any signed-in role may evaluate evidence.
  evaluate: viewerProcedure
    .meta({ role: "viewer", pure: true })
    .input(evidenceInput)
    .output(verdictSchema)
    .mutation(({ input }) => {
      const result = safeDecide(input);
      if (!result.ok) throw new AppError("INVALID_INPUT", result.error.message, { field: result.error.field });
      return result.verdict;
    }),
});
