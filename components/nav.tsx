"use client";

import Link from "next/link";
import { usePathname } from "next/navigation";
import { cx } from "./ui";

export interface NavItem {
  href: string;
  label: string;
}

/** The main navigation: adding a page is one line here. */
export const NAV_ITEMS: NavItem[] = [
  { href: "/", label: "Overview" },
  { href: "/runs", label: "Runs" },
  { href: "/intents", label: "Intents" },
  { href: "/orphans", label: "Orphans" },
  { href: "/evidence", label: "Evidence" },
  { href: "/waves", label: "Waves" },
];

function isCurrent(pathname: string, href: string): boolean {
  return href === "/" ? pathname === "/" : pathname === href || pathname.startsWith(`${href}/`);
}

export function Nav() {
  const pathname = usePathname();
  return (
    <nav aria-label="Main" className="mx-auto flex max-w-7xl flex-wrap items-center gap-x-5 gap-y-2 px-4 py-3 text-sm">
      <Link href="/" className="mr-2 font-semibold tracking-tight">
        Runwarden
      </Link>
      {NAV_ITEMS.map((item) => {
        const current = isCurrent(pathname, item.href);
        return (
          <Link
            key={item.href}
            href={item.href}
            aria-current={current ? "page" : undefined}
            className={cx(
              "rounded px-1 py-0.5",
              current ? "font-semibold text-zinc-900 underline underline-offset-4 dark:text-zinc-50" : "text-zinc-700 hover:text-zinc-950 dark:text-zinc-300 dark:hover:text-white",
            )}
          >
            {item.label}
          </Link>
        );
      })}
    </nav>
  );
}
