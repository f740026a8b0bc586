"use client";

import { createAuthClient } from "better-auth/react";

/** better-auth's browser client, on the dashboard's own origin (server/auth/auth.ts). */
export const authClient = createAuthClient({ basePath: "/api/auth" });
