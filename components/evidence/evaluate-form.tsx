"use client";

import { useMutation } from "@tanstack/react-query";
import { useId, useState } from "react";
import { toast } from "../toast";
import { useTRPC } from "@/trpc/react";
import type { RouterInputs, RouterOutputs } from "@/trpc/types";
import { ChecksTable } from "../checks-table";
import { Badge, buttonClass, ErrorNotice, Field, inputClass, Section } from "../ui";

type Verdict = RouterOutputs["proofs"]["evaluate"];

/** Paste or upload an evidence bundle (docs/evidence.md); the engine answers with the verdict and every check. */
export function EvaluateForm() {
  const trpc = useTRPC();
  const [text, setText] = useState("");
  const [parseError, setParseError] = useState<string | null>(null);
  const textId = useId();
  const fileId = useId();
  const evaluate = useMutation(
    trpc.proofs.evaluate.mutationOptions({
      onSuccess: (v) => toast.success(`Verdict: ${v.verdict}`),
      onError: (err) => toast.error(err.message),
    }),
  );

  const submit = () => {
    setParseError(null);
    evaluate.reset();
    let bundle: unknown;
    try {
      bundle = JSON.parse(text.replace(/^\uFEFF/, ""));
    } catch (err) {
      setParseError(`not JSON: ${err instanceof Error ? err.message : String(err)}`);
      return;
    }
    // A whole "Download evidence" file is a list: evaluate its first bundle, and say so.
    if (Array.isArray(bundle)) {
      if (bundle.length === 0) {
        setParseError("the file is an empty list: expected an evidence bundle");
        return;
      }
      toast.info(`The file holds ${bundle.length} bundles; evaluating the first.`);
      bundle = bundle[0];
    }
    evaluate.mutate(bundle as RouterInputs["proofs"]["evaluate"]);
  };

  return (
    <>
      <form
        className="flex flex-col gap-3"
        onSubmit={(e) => {
          e.preventDefault();
          submit();
        }}
      >
        <label htmlFor={textId} className="text-sm font-medium">
          Evidence bundle (JSON)
        </label>
        <textarea
          id={textId}
          value={text}
          onChange={(e) => setText(e.target.value)}
          rows={14}
          spellCheck={false}
          className={`${inputClass} w-full font-mono text-xs`}
          placeholder='{ "kind": "lease_binding", … }'
          data-testid="bundle-input"
        />
        <div className="flex flex-wrap items-center gap-4">
          <div className="flex items-center gap-2">
            <label htmlFor={fileId} className="text-sm">
              Or upload a file
            </label>
            <input
              id={fileId}
              type="file"
              accept="application/json,.json"
              className="text-sm file:mr-2 file:rounded file:border file:border-zinc-300 file:bg-white file:px-2 file:py-1 file:text-zinc-900 dark:file:border-zinc-600 dark:file:bg-zinc-900 dark:file:text-zinc-100"
              onChange={async (e) => {
                const file = e.target.files?.[0];
                if (file) setText(await file.text());
              }}
            />
          </div>
          <button type="submit" className={buttonClass.primary} disabled={evaluate.isPending || text.trim() === ""}>
            {evaluate.isPending ? "Evaluating…" : "Evaluate"}
          </button>
        </div>
      </form>

      {parseError ? (
        <div className="mt-4">
          <ErrorNotice title="The bundle could not be read." error={{ message: parseError }} />
        </div>
      ) : null}
      {evaluate.isError ? (
        <div className="mt-4" data-testid="evaluate-error">
          <ErrorNotice title="The bundle does not fit the evidence contract." error={evaluate.error} />
        </div>
      ) : null}
      {evaluate.data ? <VerdictView verdict={evaluate.data} /> : null}
    </>
  );
}

function VerdictView({ verdict }: { verdict: Verdict }) {
  const tail = "message" in verdict ? verdict : null;
  return (
    <Section title="Verdict" id="verdict">
      <div data-testid="verdict" className="rounded border border-zinc-200 p-4 dark:border-zinc-800">
        <dl className="grid grid-cols-2 gap-4 sm:grid-cols-4">
          <Field label="Kind">
            <span className="font-mono">{verdict.kind}</span>
          </Field>
          <Field label="Verdict">
            <Badge tone={verdict.code ? "bad" : "info"}>{verdict.verdict}</Badge>
          </Field>
          <Field label="Code">
            <span className="font-mono">{verdict.code ?? "—"}</span>
          </Field>
          <Field label="Reason">
            <span className="font-mono">{verdict.reason ?? "—"}</span>
          </Field>
        </dl>
        {tail?.message ? <p className="mt-4 text-sm">{tail.message}</p> : null}
        {tail?.nextAction ? <p className="mt-1 text-sm text-zinc-700 dark:text-zinc-300">Next: {tail.nextAction}</p> : null}
        <div className="mt-4">
          <ChecksTable checks={verdict.checks} label="Checks of the verdict" proof={verdict} />
        </div>
      </div>
    </Section>
  );
}
