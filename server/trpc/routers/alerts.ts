import {
  alertsCreateInput,
  alertsDeleteOutput,
  alertsDeliveriesInput,
  alertsDeliveriesOutput,
  alertsEndpointOutput,
  alertsListOutput,
  alertsRefInput,
  alertsSetEnabledInput,
  alertsTestOutput,
  alertsUpdateInput,
  createEndpoint,
  deleteEndpoint,
  listDeliveries,
  listEndpoints,
  setEndpointEnabled,
  testEndpoint,
  updateEndpoint,
} from "../../alerts/endpoints";
import { adminProcedure, createTRPCRouter } from "../trpc";
import { z } from "zod";

/** Outgoing webhooks (docs/alerts.md): admin only; every mutation audited by the service; no answer holds an endpoint's whole URL. */
export const alertsRouter = createTRPCRouter({
  list: adminProcedure
    .input(z.object({}).strict().optional())
    .output(alertsListOutput)
    .query(async ({ ctx }) => listEndpoints({ db: ctx.db, instanceId: await ctx.instanceId(), scope: ctx.scope })),
  /** Adds an endpoint (its URL judged by the destination policy, docs/alerts.md); its secret (given or generated) is returned once. */
  create: adminProcedure
    .input(alertsCreateInput)
    .output(alertsEndpointOutput)
    .mutation(async ({ ctx, input }) => createEndpoint({ db: ctx.db, instanceId: await ctx.instanceId(), actor: ctx.actor, scope: ctx.scope, destinations: ctx.alertDestinations }, input)),
  update: adminProcedure
    .input(alertsUpdateInput)
    .output(alertsEndpointOutput)
    .mutation(async ({ ctx, input }) => updateEndpoint({ db: ctx.db, instanceId: await ctx.instanceId(), actor: ctx.actor, scope: ctx.scope, destinations: ctx.alertDestinations }, input)),
  setEnabled: adminProcedure
    .input(alertsSetEnabledInput)
    .output(alertsEndpointOutput)
    .mutation(async ({ ctx, input }) => setEndpointEnabled({ db: ctx.db, instanceId: await ctx.instanceId(), actor: ctx.actor, scope: ctx.scope }, input)),
  delete: adminProcedure
    .input(alertsRefInput)
    .output(alertsDeleteOutput)
    .mutation(async ({ ctx, input }) => deleteEndpoint({ db: ctx.db, instanceId: await ctx.instanceId(), actor: ctx.actor, scope: ctx.scope }, input)),
  /** A `test` event through the outbox; a controller delivers it (the log shows the result). */
  test: adminProcedure
    .input(alertsRefInput)
    .output(alertsTestOutput)
    .mutation(async ({ ctx, input }) => testEndpoint({ db: ctx.db, instanceId: await ctx.instanceId(), actor: ctx.actor, scope: ctx.scope }, input)),
  deliveries: adminProcedure
    .input(alertsDeliveriesInput)
    .output(alertsDeliveriesOutput)
    .query(async ({ ctx, input }) => listDeliveries({ db: ctx.db, instanceId: await ctx.instanceId(), scope: ctx.scope }, input)),
});
