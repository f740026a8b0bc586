import { toNextJsHandler } from "better-auth/next-js";
import { authFor } from "@/server/auth/auth";
import { db } from "@/server/db";

export const dynamic = "force-dynamic";

export const { GET, POST } = toNextJsHandler((request: Request) => authFor(db()).handler(request));
