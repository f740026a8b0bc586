/** Helpers for PostgreSQL connection URLs that never leak a password. */

export function describeUrl(url: string): string {
  try {
    const u = new URL(url);
    const port = u.port ? `:${u.port}` : "";
    const db = u.pathname.replace(/^\//, "") || "(default database)";
    return `${u.hostname}${port}/${db}`;
  } catch {
    return "(unparseable DATABASE_URL)";
  }
}

export function hostOf(url: string): string {
  try {
    const u = new URL(url);
    return u.port ? `${u.hostname}:${u.port}` : u.hostname;
  } catch {
    return "(unparseable DATABASE_URL)";
  }
}

export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = "***";
    return u.toString();
  } catch {
    return "(unparseable DATABASE_URL)";
  }
}

export function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

export function databaseOf(url: string): string {
  return decodeURIComponent(new URL(url).pathname.replace(/^\//, "")) || "postgres";
}
