import { PrismaPg } from "@prisma/adapter-pg";
import { PrismaClient } from "./generated/client";

export type Db = PrismaClient;

export function createDb(url: string, options: { max?: number } = {}): Db {
  const adapter = new PrismaPg({ connectionString: url, max: options.max ?? 10 });
  return new PrismaClient({ adapter });
}

export * from "./generated/client";
