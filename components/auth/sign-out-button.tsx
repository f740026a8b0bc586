"use client";

import { useState } from "react";
import { toast } from "../toast";
import { buttonClass } from "../ui";

export function SignOutButton() {
  const [pending, setPending] = useState(false);
  return (
    <button
      type="button"
      className={`${buttonClass.secondary} py-1`}
      disabled={pending}
      onClick={async () => {
        setPending(true);
        // Loaded on click: the auth client stays out of every page's bundle (docs/decisions/0003-cost-at-scale.md).
        const { error } = await import("./auth-client").then(({ authClient }) => authClient.signOut()).catch((err: unknown) => ({ error: { message: err instanceof Error ? err.message : String(err) } }));
        if (error) {
          toast.error(`Could not sign out: ${error.message ?? "unknown error"}`);
          setPending(false);
          return;
        }
        // A full load, on purpose: nothing the old session read stays in this tab's memory,
        // and replacing the history entry keeps Back from returning to a console page.
        window.location.replace("/sign-in");
      }}
    >
      {pending ? "Signing out…" : "Sign out"}
    </button>
  );
}
