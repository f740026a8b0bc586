import type { Metadata } from "next";
import { redirect } from "next/navigation";
import { safeNextPath } from "@/components/auth/next-path";
import { SignInForm } from "@/components/auth/sign-in-form";
import { requestUser } from "@/trpc/server";

export const dynamic = "force-dynamic";
export const metadata: Metadata = { title: "Sign in" };

export default async function SignInPage({ searchParams }: { searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  const raw = (await searchParams).next;
  const next = safeNextPath(typeof raw === "string" ? raw : null);
  // Already signed in: straight on.
  if (await requestUser()) redirect(next);
  return (
    <>
      <header className="border-b border-zinc-200 dark:border-zinc-800">
        <div className="mx-auto max-w-7xl px-4 py-3 text-sm font-semibold tracking-tight">Runwarden</div>
      </header>
      <main id="main" className="mx-auto max-w-sm px-4 py-12">
        <h1 className="text-2xl font-semibold tracking-tight">Sign in</h1>
        <p className="mt-1 mb-6 text-sm text-zinc-700 dark:text-zinc-300">
          {next === "/" ? "Sign in to the Runwarden console." : (
            <>
              Sign in to continue to <span className="font-mono break-all">{next}</span>.
            </>
          )}
        </p>
        <SignInForm next={next} />
        <p className="mt-6 text-xs text-zinc-700 dark:text-zinc-300">
          There is no sign-up: an admin adds people on the Users page or with{" "}
          <code className="font-mono">npm run -s runwarden -- user add EMAIL --role ROLE --company ID</code>.
        </p>
      </main>
    </>
  );
}
