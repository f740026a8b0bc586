import { z } from "zod";
import { RunStatus } from "../../db/client";
import { createTRPCRouter, publicProcedure } from "../trpc";

const statusCounts = z.object({
  total: z.number().int(),
  byStatus: z.record(z.enum(RunStatus), z.number().int()),
});

export const runsRouter = createTRPCRouter({
  /** How many runs are in each status. */
  countByStatus: publicProcedure.output(statusCounts).query(async ({ ctx }) => {
    const rows = await ctx.db.run.groupBy({ by: ["status"], _count: { _all: true } });
    const byStatus = Object.fromEntries(Object.values(RunStatus).map((s) => [s, 0])) as Record<RunStatus, number>;
    let total = 0;
    for (const row of rows) {
      byStatus[row.status] = row._count._all;
      total += row._count._all;
    }
    return { total, byStatus };
  }),
});
