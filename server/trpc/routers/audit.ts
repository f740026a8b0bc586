import { auditListInput, auditListOutput, listAudit } from "../../audit/read";
import { createTRPCRouter, viewerProcedure } from "../trpc";

export const auditRouter = createTRPCRouter({
  /** Who did what, when, to which object, with what input and outcome (newest first). */
  list: viewerProcedure
    .input(auditListInput)
    .output(auditListOutput)
    .query(({ ctx, input }) => listAudit(ctx.db, ctx.scope, input)),
});
