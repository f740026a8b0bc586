"use client";

import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useQueryStates } from "nuqs";
import { CHECK_IDS, CHECK_TITLES } from "@/server/shared/wave-checks";
import { useTRPC } from "@/trpc/react";
import type { RouterOutputs } from "@/trpc/types";
import { Badge, Empty, ErrorNotice, inputClass, Loading, Section, TableWrap, tableClass, tdClass, thClass } from "../ui";
import { compareParams } from "./search-params";

export function WaveCompare() {
  const trpc = useTRPC();
  const [{ a, b }, set] = useQueryStates(compareParams, { history: "push" });
  const waves = useQuery(trpc.waves.list.queryOptions());
  const compare = useQuery({ ...trpc.waves.compare.queryOptions({ a: a ?? "", b: b ?? "" }), enabled: !!a && !!b });
  const finished = (waves.data ?? []).filter((w) => w.status !== "running" && w.status !== "aborted");

  return (
    <>
      <form aria-label="Waves to compare" className="flex flex-wrap items-end gap-3" onSubmit={(e) => e.preventDefault()}>
        {(["a", "b"] as const).map((which) => (
          <label key={which} className="flex flex-col gap-1 text-xs font-medium">
            {which === "a" ? "Before" : "After"}
            <select className={inputClass} value={(which === "a" ? a : b) ?? ""} onChange={(e) => void set({ [which]: e.target.value || null })}>
              <option value="">Choose a wave</option>
              {finished.map((w) => (
                <option key={w.id} value={w.id}>
                  {w.id} ({w.tasksPassed}/{w.tasks})
                </option>
              ))}
            </select>
          </label>
        ))}
      </form>
      {!a || !b ? (
        <div className="mt-4">
          <Empty>Choose two finished waves.</Empty>
        </div>
      ) : compare.isPending ? (
        <Loading label="Comparing…" />
      ) : compare.isError ? (
        <ErrorNotice title="Could not compare these waves" error={compare.error} />
      ) : (
        <>
          <Section title="Pass rates" id="rates">
            <p className="text-lg" data-testid="compare-headline">
              {compare.data.a.tasksPassed} of {compare.data.a.tasks} before, {compare.data.b.tasksPassed} of {compare.data.b.tasks} after
            </p>
            <TableWrap label="Checks passed, before and after">
              <table className={tableClass}>
                <thead className="bg-zinc-50 dark:bg-zinc-900">
                  <tr>
                    <th scope="col" className={thClass}>Check</th>
                    <th scope="col" className={thClass.replace("uppercase", "normal-case")}>
                      <Link className="underline" href={`/waves/${encodeURIComponent(compare.data.a.id)}`}>
                        {compare.data.a.id}
                      </Link>
                    </th>
                    <th scope="col" className={thClass.replace("uppercase", "normal-case")}>
                      <Link className="underline" href={`/waves/${encodeURIComponent(compare.data.b.id)}`}>
                        {compare.data.b.id}
                      </Link>
                    </th>
                  </tr>
                </thead>
                <tbody className="divide-y divide-zinc-100 dark:divide-zinc-800">
                  {CHECK_IDS.map((c) => (
                    <tr key={c}>
                      <th scope="row" className={`${tdClass} text-left`}>
                        {c} {CHECK_TITLES[c]}
                      </th>
                      <td className={`${tdClass} tabular-nums`}>
                        {compare.data.a.checks[c]?.pass ?? 0}/{compare.data.a.tasks}
                      </td>
                      <td className={`${tdClass} tabular-nums`}>
                        {compare.data.b.checks[c]?.pass ?? 0}/{compare.data.b.tasks}
                      </td>
                    </tr>
                  ))}
                  <tr>
                    <th scope="row" className={`${tdClass} text-left`}>Orphan sandboxes</th>
                    <td className={tdClass}>{compare.data.a.orphans}</td>
                    <td className={tdClass}>{compare.data.b.orphans}</td>
                  </tr>
                  <tr>
                    <th scope="row" className={`${tdClass} text-left`}>Retries needed</th>
                    <td className={tdClass}>{compare.data.a.retries}</td>
                    <td className={tdClass}>{compare.data.b.retries}</td>
                  </tr>
                </tbody>
              </table>
            </TableWrap>
          </Section>
          <Section title="Checks that changed" id="changed">
            <ChangedChecks data={compare.data} />
          </Section>
          <Section title="Failure codes" id="codes">
            {compare.data.codes.length === 0 ? (
              <Empty>No failure code in either wave.</Empty>
            ) : (
              <ul className="space-y-1 text-sm" data-testid="compare-codes">
                {compare.data.codes.map((c) => (
                  <li key={c.code}>
                    <span className="font-mono text-xs">{c.code}</span> {c.a} → {c.b}{" "}
                    <Badge tone={c.change === "vanished" || c.change === "fewer" ? "good" : c.change === "appeared" || c.change === "more" ? "bad" : "neutral"}>{c.change}</Badge>
                  </li>
                ))}
              </ul>
            )}
          </Section>
        </>
      )}
    </>
  );
}

type Compared = RouterOutputs["waves"]["compare"];

/**
 * Checks that changed, task by task. A task only one wave ran is one line ("only before:
 * …"), not a line per check saying "absent".
 */
function ChangedChecks({ data }: { data: Compared }) {
  const onlyA = [...new Set(data.changed.filter((c) => c.b === null).map((c) => c.task))];
  const onlyB = [...new Set(data.changed.filter((c) => c.a === null).map((c) => c.task))];
  const changed = data.changed.filter((c) => c.a !== null && c.b !== null);
  if (changed.length === 0 && onlyA.length === 0 && onlyB.length === 0) return <Empty>Every task&apos;s checks came out the same.</Empty>;
  return (
    <ul className="space-y-1 text-sm" data-testid="compare-changed">
      {changed.map((c) => (
        <li key={`${c.task}-${c.check}`}>
          <span className="font-mono">{c.task}</span> {c.check} {CHECK_TITLES[c.check]}: {label(c.a)} → {label(c.b)}
        </li>
      ))}
      {onlyA.length ? (
        <li data-testid="compare-only-a">
          {onlyA.length} task{onlyA.length === 1 ? "" : "s"} only in <span className="font-mono">{data.a.id}</span> (absent after): <span className="font-mono">{onlyA.join(", ")}</span>
        </li>
      ) : null}
      {onlyB.length ? (
        <li data-testid="compare-only-b">
          {onlyB.length} task{onlyB.length === 1 ? "" : "s"} only in <span className="font-mono">{data.b.id}</span> (absent before): <span className="font-mono">{onlyB.join(", ")}</span>
        </li>
      ) : null}
    </ul>
  );
}

function label(v: boolean | null): string {
  return v === null ? "absent" : v ? "pass" : "fail";
}
