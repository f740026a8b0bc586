import type { Metadata } from "next";
import Link from "next/link";
import { TRPCReactProvider } from "@/trpc/react";
import "./globals.css";

export const metadata: Metadata = {
  title: { default: "Runwarden", template: "%s · Runwarden" },
  description: "Recovery console for AI-agent runs in remote sandboxes",
};

export default function RootLayout({ children }: { children: React.ReactNode }) {
  return (
    <html lang="en">
      <body className="min-h-screen">
        <TRPCReactProvider>
          <header className="border-b border-zinc-200 dark:border-zinc-800">
            <nav aria-label="Main" className="mx-auto flex max-w-7xl items-center gap-6 px-4 py-3 text-sm">
              <Link href="/" className="font-semibold tracking-tight">
                Runwarden
              </Link>
            </nav>
          </header>
          <main className="mx-auto max-w-7xl px-4 py-6">{children}</main>
        </TRPCReactProvider>
      </body>
    </html>
  );
}
