import { z } from "zod";
import { ROLES } from "../../auth/roles";
import { addUser, addUserInput, peopleWhere } from "../../auth/users";
import { adminProcedure, createTRPCRouter } from "../trpc";

export const usersRouter = createTRPCRouter({
  list: adminProcedure
    .output(z.array(z.object({ id: z.string(), email: z.string(), name: z.string(), role: z.string(), companies: z.array(z.string()), createdAt: z.date() })))
    .query(({ ctx }) => ctx.db.user.findMany({ where: peopleWhere(ctx.scope), orderBy: { createdAt: "asc" }, select: { id: true, email: true, name: true, role: true, companies: true, createdAt: true } })),
  /** Adds a person; a generated password is returned once and never stored in clear. */
  add: adminProcedure
    .input(addUserInput)
    .output(z.object({ id: z.string(), email: z.string(), role: z.enum(ROLES), companies: z.array(z.string()), generatedPassword: z.string().nullable() }))
    .mutation(({ ctx, input }) => addUser(ctx.db, input, ctx.actor, ctx.scope)),
});
