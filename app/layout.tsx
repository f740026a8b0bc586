import type { Metadata } from "next";
import { Nav } from "@/components/nav";
import { Providers } from "@/components/providers";
import "./globals.css";

export const metadata: Metadata = {
  title: { default: "Runwarden", template: "%s · Runwarden" },
  description: "Recovery console for AI-agent runs in remote sandboxes",
};

export default function RootLayout({ children }: { children: React.ReactNode }) {
  return (
    <html lang="en">
      <body className="min-h-screen">
        <Providers>
          <a href="#main" className="sr-only focus:not-sr-only focus:absolute focus:top-2 focus:left-2 focus:rounded focus:bg-white focus:px-3 focus:py-2 dark:focus:bg-zinc-900">
            Skip to content
          </a>
          <header className="border-b border-zinc-200 dark:border-zinc-800">
            <Nav />
          </header>
          <main id="main" className="mx-auto max-w-7xl px-4 py-6">
            {children}
          </main>
        </Providers>
      </body>
    </html>
  );
}
