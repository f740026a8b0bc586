"use client";

import Link from "next/link";
import { usePathname } from "next/navigation";
import { roleAllows, type Role } from "@/server/shared/roles";
import { useMe } from "./auth/access";
import { SignOutButton } from "./auth/sign-out-button";
import { Badge, cx } from "./ui";

export interface NavItem {
  href: string;
  label: string;
  /** Shown only to this role and above (the page itself says so to anyone else). */
  role?: Role;
}

/** The main navigation: adding a page is one line here. */
export const NAV_ITEMS: NavItem[] = [
  { href: "/", label: "Overview" },
  { href: "/runs", label: "Runs" },
  { href: "/intents", label: "Intents" },
  { href: "/orphans", label: "Orphans" },
  { href: "/evidence", label: "Evidence" },
  { href: "/waves", label: "Waves" },
  { href: "/forecast", label: "Forecast" },
  { href: "/audit", label: "Audit" },
  { href: "/users", label: "Users", role: "admin" },
  { href: "/tokens", label: "API tokens", role: "admin" },
  { href: "/alerts", label: "Alerts", role: "admin" },
];

function isCurrent(pathname: string, href: string): boolean {
  return href === "/" ? pathname === "/" : pathname === href || pathname.startsWith(`${href}/`);
}

export function Nav() {
  const pathname = usePathname();
  const me = useMe().data;
  const items = NAV_ITEMS.filter((item) => !item.role || (me && roleAllows(me.role, item.role)));
  return (
    <nav aria-label="Main" className="mx-auto flex max-w-7xl flex-wrap items-center gap-x-5 gap-y-2 px-4 py-3 text-sm">
      <Link href="/" className="mr-2 font-semibold tracking-tight">
        Runwarden
      </Link>
      {items.map((item) => {
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
      {me ? (
        <div className="ml-auto flex flex-wrap items-center gap-2" data-testid="signed-in-as">
          <span className="text-zinc-700 dark:text-zinc-300">
            <span className="sr-only">Signed in as </span>
            <span className="font-medium text-zinc-900 dark:text-zinc-100">{me.email}</span>
          </span>
          <Badge tone="info" title={me.companies === "all" ? "every company" : `companies: ${me.companies.join(", ")}`}>
            {me.role}
          </Badge>
          <span className="text-xs text-zinc-700 dark:text-zinc-300">{me.companies === "all" ? "all companies" : me.companies.join(", ")}</span>
          <SignOutButton />
        </div>
      ) : null}
    </nav>
  );
}
