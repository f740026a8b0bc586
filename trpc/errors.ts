/**
 * A 4xx answer (bad input, not found, forbidden, signed out) gives the same answer however
 * often it is asked: it is shown, never retried or polled (no flicker, no request storm).
 * Duck-typed on TRPCClientError's `data.httpStatus`, so this module has no imports and is
 * safe on both sides.
 */
export function isClientError(error: unknown): boolean {
  if (!error || typeof error !== "object" || !("data" in error)) return false;
  const data = (error as { data?: unknown }).data;
  const status = data && typeof data === "object" ? (data as { httpStatus?: unknown }).httpStatus : undefined;
  return typeof status === "number" && status >= 400 && status < 500;
}
