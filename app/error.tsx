"use client";

import ConsoleError from "./(console)/error";

/** An error outside a console page (e.g. the database is down while the session is read). */
export default function RootError(props: { error: Error & { digest?: string }; reset: () => void }) {
  return (
    <main id="main" className="mx-auto max-w-7xl px-4 py-6">
      <ConsoleError {...props} />
    </main>
  );
}
