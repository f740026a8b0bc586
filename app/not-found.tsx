import Link from "next/link";
import { linkClass } from "@/components/ui";

/** An address that matches no page (the console's own not-found is in app/(console)). */
export default function NotFound() {
  return (
    <main id="main" className="mx-auto max-w-2xl px-4 py-12">
      <h1 className="text-2xl font-semibold">Not found</h1>
      <p className="mt-2 text-sm text-zinc-700 dark:text-zinc-300">There is nothing at this address.</p>
      <p className="mt-4 text-sm">
        <Link href="/" className={linkClass}>
          Back to the overview
        </Link>
      </p>
    </main>
  );
}
