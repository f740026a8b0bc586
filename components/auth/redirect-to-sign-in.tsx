"use client";

import { redirect, usePathname, useSearchParams } from "next/navigation";
import { signInHref } from "./next-path";

/**
 * Rendered by the console layout when nobody is signed in. A layout is not told which page
 * it wraps, so this reads the address and redirects (an HTTP redirect when it happens while
 * the page is rendered on the server), remembering the page in `?next=`.
 */
export function RedirectToSignIn(): never {
  const pathname = usePathname();
  const search = useSearchParams().toString();
  redirect(signInHref(search ? `${pathname}?${search}` : pathname));
}
