import Link from "next/link";
import { linkClass } from "@/components/ui";

export default function NotFound() {
  return (
    <div className="max-w-2xl">
      <h1 className="text-2xl font-semibold">Not found</h1>
      <p className="mt-2 text-sm text-zinc-700 dark:text-zinc-300">There is nothing at this address: no run or wave you can see has this id.</p>
      <p className="mt-4 text-sm">
        <Link href="/runs" className={linkClass}>
          Back to the runs
        </Link>
      </p>
    </div>
  );
}
