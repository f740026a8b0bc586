import type { Metadata } from "next";
import { Providers } from "@/components/providers";
import "./globals.css";

export const metadata: Metadata = {
  title: { default: "Runwarden", template: "%s · Runwarden" },
  description: "Recovery console for AI-agent runs in remote sandboxes",
};

/** The document; the console's header and navigation are in app/(console)/layout.tsx, behind sign-in. */
export default function RootLayout({ children }: { children: React.ReactNode }) {
  return (
    <html lang="en">
      <body className="min-h-screen">
        <Providers>
          <a href="#main" className="sr-only focus:not-sr-only focus:absolute focus:top-2 focus:left-2 focus:rounded focus:bg-white focus:px-3 focus:py-2 dark:focus:bg-zinc-900">
            Skip to content
          </a>
          {children}
        </Providers>
      </body>
    </html>
  );
}
