"use client";

import dynamic from "next/dynamic";

// sonner is not part of any page's initial JavaScript (docs/decisions/0003-cost-at-scale.md: ≤ 200 KB): its Toaster loads
// once the page is interactive, and `toast` fetches the same module. A toast shown before the
// Toaster subscribes is replayed when it does (sonner's ToastState).
const SonnerToaster = dynamic(() => import("sonner").then((m) => m.Toaster), { ssr: false });

/** Where toasts appear. */
export function Toaster() {
  return <SonnerToaster theme="system" closeButton />;
}

type Kind = "success" | "error" | "info";
function show(kind: Kind, message: string) {
  void import("sonner").then(({ toast: sonner }) => sonner[kind](message));
}

/** sonner's `toast`, for the kinds the console uses. */
export const toast = {
  success: (message: string) => show("success", message),
  error: (message: string) => show("error", message),
  info: (message: string) => show("info", message),
};
