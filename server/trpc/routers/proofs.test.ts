import { TRPCError } from "@trpc/server";
import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import { describe, expect, test } from "vitest";
import { leaseBinding, startupFailure } from "../../test/evidence";
import { appRouter, createCaller } from "../root";
import { createTRPCContext } from "../trpc";
import { TEST_ADMIN } from "../../test/users";

// proofs.evaluate never touches the database.
const caller = createCaller(() => createTRPCContext({ user: TEST_ADMIN, headers: new Headers(), db: {} as never }));

async function rejection(input: unknown): Promise<TRPCError> {
  try {
    await caller.proofs.evaluate(input as never);
  } catch (err) {
    if (err instanceof TRPCError) return err;
    throw err;
  }
  throw new Error("expected proofs.evaluate to reject");
}

describe("proofs.evaluate", () => {
  test("a valid bundle returns the verdict with its checks", async () => {
    const v = await caller.proofs.evaluate(leaseBinding());
    expect(v).toMatchObject({ kind: "lease_binding", verdict: "admitted", code: null });
    expect(v.checks.map((c) => c.name)).toEqual([
      "same_run",
      "same_provider_lease",
      "same_remote_cwd",
      "not_replacement",
      "staged_header_readable",
      "staged_source_run_matches",
      "staged_template_digest_matches",
      "staged_runner_identity_matches",
    ]);
  });

  test("the verdict carries the catalogue's fields", async () => {
    const v = await caller.proofs.evaluate(startupFailure());
    expect(v).toMatchObject({
      kind: "startup_failure",
      verdict: "terminal_failure",
      code: "native_provider_startup_rejected",
      owner: "board",
      canRetry: true,
      nextAction: "The provider refused to start the session: fix the credentials, then Retry",
    });
  });

  test("a wrong field type is BAD_REQUEST naming the field", async () => {
    const bundle = leaseBinding();
    const err = await rejection({ ...bundle, claim: { ...bundle.claim, remote: { ...bundle.claim.remote, providerLeaseId: 42 } } });
    expect(err.code).toBe("BAD_REQUEST");
    expect(err.message).toBe("evidence.claim.remote.providerLeaseId: expected string");
  });

  test.each([
    { name: "an unknown kind", input: { kind: "nope" }, message: /^evidence\.kind: expected one of lease_binding, / },
    { name: "no bundle", input: undefined, message: /^evidence: expected object/ },
    { name: "a missing field", input: { kind: "process_exit" }, message: /^evidence\.observer: expected object \(missing\)$/ },
  ])("$name is BAD_REQUEST naming the field", async ({ input, message }) => {
    const err = await rejection(input);
    expect(err.code).toBe("BAD_REQUEST");
    expect(err.message).toMatch(message);
  });
});

describe("proofs.evaluate over HTTP", () => {
  async function post(bundle: unknown): Promise<{ status: number; body: unknown }> {
    const req = new Request("http://localhost/api/trpc/proofs.evaluate", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ json: bundle }),
    });
    const res = await fetchRequestHandler({
      endpoint: "/api/trpc",
      req,
      router: appRouter,
      createContext: () => createTRPCContext({ user: TEST_ADMIN, headers: req.headers, db: {} as never }),
    });
    return { status: res.status, body: await res.json() };
  }

  test("a bad bundle is HTTP 400 with the field in the message and INVALID_INPUT as the app code", async () => {
    const bundle = leaseBinding();
    const { status, body } = await post({ ...bundle, claim: { ...bundle.claim, remote: { ...bundle.claim.remote, providerLeaseId: 42 } } });
    expect(status).toBe(400);
    expect(body).toMatchObject({
      error: {
        json: {
          message: "evidence.claim.remote.providerLeaseId: expected string",
          data: { code: "BAD_REQUEST", appCode: "INVALID_INPUT" },
        },
      },
    });
  });

  test("a valid bundle is HTTP 200 with the verdict", async () => {
    const { status, body } = await post(leaseBinding());
    expect(status).toBe(200);
    expect(body).toMatchObject({ result: { data: { json: { kind: "lease_binding", verdict: "admitted" } } } });
  });
});
