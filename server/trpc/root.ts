import { proofsRouter } from "./routers/proofs";
import { runsRouter } from "./routers/runs";
import { createCallerFactory, createTRPCRouter } from "./trpc";

export const appRouter = createTRPCRouter({
  runs: runsRouter,
  proofs: proofsRouter,
});

export type AppRouter = typeof appRouter;

export const createCaller = createCallerFactory(appRouter);
