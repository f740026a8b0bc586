import { z } from "zod";
import { disableUser, enableUser, personOutput, resetPassword, resetPasswordOutput, updateUser, updateUserInput, userRefInput, type Acting } from "../../auth/people";
import { judgePeopleChange } from "../../auth/people-rules";
import { ROLES } from "../../shared/roles";
import { addUser, addUserInput, peopleWhere } from "../../auth/users";
import { adminProcedure, createTRPCRouter } from "../trpc";

const acting = (ctx: { user: { id: string }; scope: Acting["scope"] }): Acting => ({ userId: ctx.user.id, scope: ctx.scope });

export const usersRouter = createTRPCRouter({
  list: adminProcedure
    .output(
      z.array(
        z.object({
          id: z.string(),
          email: z.string(),
          name: z.string(),
          role: z.string(),
          companies: z.array(z.string()),
          createdAt: z.date(),
          disabledAt: z.date().nullable(),
          /** Whether this admin may change them (they hold all of the person's companies). */
          manageable: z.boolean(),
          /** The person asking. */
          self: z.boolean(),
        }),
      ),
    )
    .query(async ({ ctx }) => {
      const people = await ctx.db.user.findMany({ where: peopleWhere(ctx.scope), orderBy: { createdAt: "asc" }, select: { id: true, email: true, name: true, role: true, companies: true, createdAt: true, disabledAt: true } });
      const me = acting(ctx);
      // Reach only (a huge starAdmins count): the last-admin rule is for the change itself.
      const reach = (p: (typeof people)[number]) => judgePeopleChange(me, { ...p, disabled: p.disabledAt !== null }, { kind: "reset_password" }, Number.MAX_SAFE_INTEGER).ok;
      return people.map((p) => ({ ...p, manageable: reach(p), self: p.id === ctx.user.id }));
    }),
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
