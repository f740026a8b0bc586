"use client";

import { useId, useRef, useState } from "react";
import { buttonClass, inputClass } from "../ui";
import { authClient } from "./auth-client";

/** What went wrong, in words a person can act on. */
export function signInErrorMessage(error: { status?: number; code?: string; message?: string; statusText?: string }): string {
  if (error.status === 429) return "Too many attempts; wait a minute and try again.";
  if (error.status === 401 || error.code === "INVALID_EMAIL_OR_PASSWORD") return "Wrong email or password.";
  if (error.status === 403) return `Sign-in was refused: ${error.message ?? "this page's address is not one Runwarden trusts"}.`;
  return `Sign-in failed: ${error.message || error.statusText || `HTTP ${error.status ?? "error"}`}.`;
}

export function SignInForm({ next }: { next: string }) {
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [pending, setPending] = useState(false);
  const passwordRef = useRef<HTMLInputElement>(null);
  const errorId = useId();

  async function onSubmit(e: React.FormEvent<HTMLFormElement>) {
    e.preventDefault();
    if (pending) return;
    setPending(true);
    setError(null);
    let message: string;
    try {
      const result = await authClient.signIn.email({ email: email.trim(), password });
      if (!result.error) {
        // A full load, on purpose: the console renders for the new session from a clean
        // cache, and Back does not return to this form.
        window.location.replace(next);
        return;
      }
      message = signInErrorMessage(result.error);
    } catch (err) {
      message = `Could not reach Runwarden (${err instanceof Error ? err.message : String(err)}); check the connection and try again.`;
    }
    setError(message);
    setPending(false);
    setPassword("");
    passwordRef.current?.focus();
  }

  return (
    <form className="flex flex-col gap-4" onSubmit={(e) => void onSubmit(e)} aria-describedby={error ? errorId : undefined}>
      <div className="flex flex-col gap-1">
        <label htmlFor="sign-in-email" className="text-sm font-medium">
          Email
        </label>
        <input
          id="sign-in-email"
          name="email"
          type="email"
          autoComplete="username"
          required
          value={email}
          onChange={(e) => setEmail(e.target.value)}
          className={`${inputClass} w-full`}
          aria-invalid={error ? true : undefined}
        />
      </div>
      <div className="flex flex-col gap-1">
        <label htmlFor="sign-in-password" className="text-sm font-medium">
          Password
        </label>
        <input
          id="sign-in-password"
          ref={passwordRef}
          name="password"
          type="password"
          autoComplete="current-password"
          required
          value={password}
          onChange={(e) => setPassword(e.target.value)}
          className={`${inputClass} w-full`}
          aria-invalid={error ? true : undefined}
        />
      </div>
      {error ? (
        <p id={errorId} role="alert" className="rounded border border-red-300 bg-red-50 p-3 text-sm text-red-900 dark:border-red-800 dark:bg-red-950 dark:text-red-100" data-testid="sign-in-error">
          {error}
        </p>
      ) : null}
      <button type="submit" className={`${buttonClass.primary} justify-center`} disabled={pending}>
        {pending ? "Signing in…" : "Sign in"}
      </button>
    </form>
  );
}
