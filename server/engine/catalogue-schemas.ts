import { z } from "zod";
import { OUTCOME_CLASSES, OWNERS, type CatalogueRow, type FailureDescription } from "./catalogue";

/** A catalogue row as a schema: verdicts, stored proofs and the run detail extend it. */
export const catalogueRowSchema = z.object({
  outcome: z.enum(OUTCOME_CLASSES),
  owner: z.enum(OWNERS),
  canRetry: z.boolean(),
  message: z.string(),
  nextAction: z.string(),
}) satisfies z.ZodType<CatalogueRow>;

/** What a reader sees for any stored code, as a schema. */
export const failureDescriptionSchema = catalogueRowSchema.extend({
  code: z.string(),
  known: z.boolean(),
}) satisfies z.ZodType<FailureDescription>;
