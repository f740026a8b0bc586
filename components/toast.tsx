"use client";

import dynamic from "next/dynamic";
import { useSyncExternalStore } from "react";

// sonner loads with the first toast, not with every page (issue 13: ≤ 200 KB of initial JS).
// A toast shown before its Toaster subscribes is replayed when it does (sonner's ToastState).
const SonnerToaster = dynamic(() => import("sonner").then((m) => m.Toaster), { ssr: false });

let wanted = false;
const listeners = new Set<() => void>();
function subscribe(listener: () => void) {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/** Where toasts appear; mounted (and sonner fetched) once the page shows its first toast. */
export function Toaster() {
  const on = useSyncExternalStore(subscribe, () => wanted, () => false);
  return on ? <SonnerToaster theme="system" closeButton /> : null;
}

type Kind = "success" | "error" | "info";
function show(kind: Kind, message: string) {
  if (!wanted) {
    wanted = true;
    for (const listener of listeners) listener();
  }
  void import("sonner").then(({ toast: sonner }) => sonner[kind](message));
}

/** sonner's `toast`, for the kinds the console uses. */
export const toast = {
  success: (message: string) => show("success", message),
  error: (message: string) => show("error", message),
  info: (message: string) => show("info", message),
};
