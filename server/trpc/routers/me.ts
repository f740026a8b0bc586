import { z } from "zod";
import { ROLES, type SessionUser } from "../../shared/roles";
import { createTRPCRouter, viewerProcedure } from "../trpc";

export const meOutput = z.object({
  email: z.string(),
  role: z.enum(ROLES),
  /** The companies this person sees and acts on, or "all". */
  companies: z.union([z.array(z.string()), z.literal("all")]),
});
export type Me = z.infer<typeof meOutput>;

export function meOf(user: SessionUser): Me {
  return { email: user.email, role: user.role, companies: user.scope.all ? "all" : [...user.scope.companies] };
}

export const meRouter = createTRPCRouter({
  /** Who is signed in: the UI uses it to explain what a role cannot do (the server enforces it). */
  get: viewerProcedure.output(meOutput).query(({ ctx }) => meOf(ctx.user)),
});
