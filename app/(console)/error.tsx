"use client";

import { ErrorNotice, buttonClass } from "@/components/ui";

/** Any error a page throws while rendering: its message, and a way to try again. */
export default function ErrorPage({ error, reset }: { error: Error & { digest?: string }; reset: () => void }) {
  return (
    <div className="max-w-2xl">
      <h1 className="mb-4 text-2xl font-semibold">Something went wrong</h1>
      <ErrorNotice title="This page could not be shown." error={error} />
      {error.digest ? <p className="mt-2 text-xs text-zinc-600 dark:text-zinc-400">Reference: {error.digest} (in the server log)</p> : null}
      <button type="button" onClick={reset} className={`${buttonClass.secondary} mt-4`}>
        Try again
      </button>
    </div>
  );
}
