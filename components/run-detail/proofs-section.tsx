"use client";

import { useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { toast } from "../toast";
import { useTRPC } from "@/trpc/react";
import { ChecksTable } from "../checks-table";
import { Badge, buttonClass, Empty, JsonBlock, linkClass, RelativeTime, Section, shortId } from "../ui";
import type { Detail } from "./detail";

function download(filename: string, value: unknown) {
  const url = URL.createObjectURL(new Blob([`${JSON.stringify(value, null, 2)}\n`], { type: "application/json" }));
  const a = document.createElement("a");
  a.href = url;
  a.download = filename;
  document.body.appendChild(a);
  a.click();
  a.remove();
  URL.revokeObjectURL(url);
}

/** Each proof as the engine recorded it, with its evidence bundle to download. */
export function ProofsSection({ id, detail: d }: { id: string; detail: Detail }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [downloading, setDownloading] = useState(false);

  /** The stored bundles, each one accepted by `runwarden decide`. */
  const fetchBundles = () => queryClient.fetchQuery({ ...trpc.runs.evidence.queryOptions({ id }), staleTime: 0 });
  const downloadAll = async () => {
    setDownloading(true);
    try {
      const bundles = await fetchBundles();
      download(`runwarden-evidence-${id}.json`, bundles.map((b) => b.evidence));
      toast.success(`Downloaded ${bundles.length} evidence bundle${bundles.length === 1 ? "" : "s"}.`);
    } catch (err) {
      toast.error(`Could not download the evidence: ${err instanceof Error ? err.message : String(err)}`);
    } finally {
      setDownloading(false);
    }
  };
  const downloadOne = async (proofId: string) => {
    try {
      const bundle = (await fetchBundles()).find((b) => b.proofId === proofId);
      if (!bundle) throw new Error("the proof is not stored any more");
      download(`runwarden-evidence-${proofId}.json`, bundle.evidence);
    } catch (err) {
      toast.error(`Could not download the bundle: ${err instanceof Error ? err.message : String(err)}`);
    }
  };

  return (
    <Section
      title="Proofs"
      id="proofs"
      actions={
        <button type="button" className={buttonClass.secondary} onClick={() => void downloadAll()} disabled={downloading || d.proofs.length === 0} data-testid="download-evidence">
          {downloading ? "Preparing…" : "Download evidence"}
        </button>
      }
    >
      <p className="mb-3 text-xs text-zinc-700 dark:text-zinc-300">
        Each decision exactly as the engine recorded it. The download is a JSON array of the evidence bundles; the file as it is (or a single proof&apos;s bundle) is accepted by{" "}
        <code>npm run -s runwarden -- decide FILE</code>, one verdict per bundle.
      </p>
      {d.proofs.length === 0 ? (
        <Empty>No proofs recorded for this run.</Empty>
      ) : (
        <ol className="flex flex-col gap-4">
          {d.proofs.map((p) => (
            <li key={p.id} id={`proof-${p.id}`} className="scroll-mt-4 rounded border border-zinc-200 p-4 target:border-blue-500 dark:border-zinc-800" data-testid="proof" data-proof-kind={p.kind}>
              <div className="flex flex-wrap items-center gap-2">
                <h3 className="font-mono text-sm font-semibold">{p.kind}</h3>
                <Badge tone={["admitted", "restart_bootstrap", "reclaim", "commit", "release"].includes(p.verdict) ? "good" : p.code ? "bad" : "neutral"}>{p.verdict}</Badge>
                {p.code ? <span className="font-mono text-xs">{p.code}</span> : null}
                {p.reason ? <span className="text-xs text-zinc-700 dark:text-zinc-300">reason: {p.reason}</span> : null}
                <span className="ml-auto text-xs text-zinc-700 dark:text-zinc-300">
                  by <span className="font-mono">{shortId(p.evaluatedBy)}</span> · <RelativeTime date={p.evaluatedAt} />
                </span>
                <button type="button" className={`${linkClass} text-xs`} onClick={() => void downloadOne(p.id)}>
                  Download bundle
                </button>
              </div>
              {p.failure ? <p className="mt-2 text-sm">{p.failure.message}</p> : null}
              <div className="mt-3">
                {p.checks ? <ChecksTable checks={p.checks} label={`Checks of the ${p.kind} proof`} proof={p} /> : <JsonBlock value={p.checksRaw} label="Checks as stored (not a list of checks)" />}
              </div>
            </li>
          ))}
        </ol>
      )}
    </Section>
  );
}
