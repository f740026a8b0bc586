import { liveTokenOutput, readLiveToken } from "../../live";
import { createTRPCRouter, viewerProcedure } from "../trpc";

export const liveRouter = createTRPCRouter({
  /** What live pages poll instead of their queries: each topic's change counter and the reader's snapshot bounds. */
  token: viewerProcedure.output(liveTokenOutput).query(async ({ ctx }) => readLiveToken(ctx.db)),
});
