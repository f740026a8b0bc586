import { z } from "zod";
import { disableUser, enableUser, listPeople, peopleListOutput, personOutput, resetPassword, resetPasswordOutput, updateUser, updateUserInput, userRefInput, type Acting } from "../../auth/people";
import { ROLES } from "../../shared/roles";
import { addUser, addUserInput } from "../../auth/users";
import { adminProcedure, createTRPCRouter } from "../trpc";

const acting = (ctx: { user: { id: string }; scope: Acting["scope"] }): Acting => ({ userId: ctx.user.id, scope: ctx.scope });

export const usersRouter = createTRPCRouter({
  list: adminProcedure.output(peopleListOutput).query(({ ctx }) => listPeople(ctx.db, acting(ctx))),
  /** Adds a person; a generated password is returned once and never stored in clear. */
  add: adminProcedure
    .input(addUserInput)
    .output(z.object({ id: z.string(), email: z.string(), role: z.enum(ROLES), companies: z.array(z.string()), generatedPassword: z.string().nullable() }))
    .mutation(({ ctx, input }) => addUser(ctx.db, input, ctx.actor, ctx.scope)),
  /** Changes a person's role and/or companies (`user` is their id or email). */
  update: adminProcedure
    .input(updateUserInput)
    .output(personOutput)
    .mutation(({ ctx, input }) => updateUser(ctx.db, input, ctx.actor, acting(ctx))),
  /** Disables a person: no sign-in, and their sessions end at once. */
  disable: adminProcedure
    .input(userRefInput)
    .output(personOutput)
    .mutation(({ ctx, input }) => disableUser(ctx.db, input, ctx.actor, acting(ctx))),
  enable: adminProcedure
    .input(userRefInput)
    .output(personOutput)
    .mutation(({ ctx, input }) => enableUser(ctx.db, input, ctx.actor, acting(ctx))),
  /** A new generated password, returned once; only its hash is kept, and it is not audited. */
  resetPassword: adminProcedure
    .input(userRefInput)
    .output(resetPasswordOutput)
    .mutation(({ ctx, input }) => resetPassword(ctx.db, input, ctx.actor, acting(ctx))),
});
