/**
 * An intent's last inspection (as the sweep stores it: `{ found, sandbox?, sandboxId?, at }`
 * or `{ error, at }`) in words, for the intents page. Pure; anything unexpected is said to be so.
 */
export function describeInspection(value: unknown): string | null {
  if (value == null) return null;
  if (typeof value !== "object" || Array.isArray(value)) return "An inspection in a form this version does not read.";
  const v = value as Record<string, unknown>;
  if (typeof v.error === "string") return `The provider could not be asked: ${v.error}`;
  if (v.found === false) return "No sandbox with its exact name existed at the provider.";
  if (v.found === true) {
    const sandbox = (typeof v.sandbox === "object" && v.sandbox !== null ? v.sandbox : {}) as { name?: unknown; labels?: unknown };
    const labels = (typeof sandbox.labels === "object" && sandbox.labels !== null ? sandbox.labels : {}) as Record<string, unknown>;
    const id = typeof v.sandboxId === "string" ? ` ${v.sandboxId}` : "";
    const name = typeof sandbox.name === "string" ? ` named ${sandbox.name}` : "";
    const parts = (["instance", "company", "operation"] as const).map((k) => `${k} ${typeof labels[k] === "string" ? labels[k] : "missing"}`);
    return `Found sandbox${id}${name}, labelled ${parts.join(", ")}.`;
  }
  return "An inspection in a form this version does not read.";
}
