import pg from "pg";

/** One statement on its own connection (CREATE / DROP DATABASE for a throwaway database). */
export async function admin(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}
