import { intentsRouter } from "./routers/intents";
import { orphansRouter } from "./routers/orphans";
import { proofsRouter } from "./routers/proofs";
import { runsRouter } from "./routers/runs";
import { sweepsRouter } from "./routers/sweeps";
import { wavesRouter } from "./routers/waves";
import { auditRouter } from "./routers/audit";
import { usersRouter } from "./routers/users";
import { meRouter } from "./routers/me";
import { overviewRouter } from "./routers/overview";
import { liveRouter } from "./routers/live";
import { plansRouter } from "./routers/plans";
import { alertsRouter } from "./routers/alerts";
import { forecastsRouter } from "./routers/forecasts";
import { tokensRouter } from "./routers/tokens";
import { createCallerFactory, createTRPCRouter } from "./trpc";

export const appRouter = createTRPCRouter({
  runs: runsRouter,
  sweeps: sweepsRouter,
  waves: wavesRouter,
  proofs: proofsRouter,
  intents: intentsRouter,
  orphans: orphansRouter,
  users: usersRouter,
  audit: auditRouter,
  me: meRouter,
  overview: overviewRouter,
  live: liveRouter,
  plans: plansRouter,
  alerts: alertsRouter,
  forecasts: forecastsRouter,
  tokens: tokensRouter,
});

export type AppRouter = typeof appRouter;

export const createCaller = createCallerFactory(appRouter);
