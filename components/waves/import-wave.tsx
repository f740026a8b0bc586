"use client";

import { useMutation, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { useState } from "react";
import { toast } from "../toast";
import { useTRPC } from "@/trpc/react";
import { usePermission } from "../auth/access";
import { buttonClass, ErrorNotice } from "../ui";

/** Upload a report made elsewhere (`npm run wave -- --json FILE`); a bad one is refused whole. */
export function ImportWave() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [parseError, setParseError] = useState<string | null>(null);
  const can = usePermission("waves.import", "import wave reports");
  const importWave = useMutation(
    trpc.waves.import.mutationOptions({
      onSuccess: (res) => {
        toast.success(`Imported ${res.id}`);
        void queryClient.invalidateQueries({ queryKey: trpc.waves.list.queryKey() });
      },
    }),
  );

  async function onFile(file: File | undefined) {
    setParseError(null);
    importWave.reset();
    if (!file) return;
    let report: unknown;
    try {
      report = JSON.parse(await file.text()) as unknown;
    } catch (err) {
      setParseError(`${file.name} is not JSON: ${err instanceof Error ? err.message : String(err)}`);
      return;
    }
    importWave.mutate({ report });
  }

  return (
    <div className="flex flex-col gap-3">
      <label className="flex flex-col gap-1 text-sm">
        <span className="font-medium">Wave report (JSON)</span>
        <input
          type="file"
          accept="application/json,.json"
          className={buttonClass.secondary}
          onChange={(e) => void onFile(e.target.files?.[0])}
          disabled={importWave.isPending || !can.allowed}
          aria-describedby={can.reason ? "import-refusal" : undefined}
        />
      </label>
      {can.reason ? (
        <p id="import-refusal" className="text-sm text-zinc-700 dark:text-zinc-300" data-testid="import-refusal">
          {can.reason}
        </p>
      ) : null}
      {importWave.isPending ? <p role="status" className="text-sm">Importing…</p> : null}
      {parseError ? <ErrorNotice title="The file could not be read" error={{ message: parseError }} /> : null}
      {importWave.isError ? <ErrorNotice title="The report was refused" error={importWave.error} /> : null}
      {importWave.isSuccess ? (
        <p className="text-sm">
          Imported{" "}
          <Link className="text-blue-700 underline dark:text-blue-300" href={`/waves/${encodeURIComponent(importWave.data.id)}`}>
            {importWave.data.id}
          </Link>{" "}
          ({importWave.data.tasks} tasks, {importWave.data.passed ? "passed" : "failed"}).
        </p>
      ) : null}
    </div>
  );
}
