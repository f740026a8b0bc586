import type { Metadata } from "next";
import { EvaluateForm } from "@/components/evidence/evaluate-form";
import { PageHeader } from "@/components/ui";

export const metadata: Metadata = { title: "Evaluate evidence" };

export default function EvidencePage() {
  return (
    <>
      <PageHeader title="Evaluate evidence">
        Paste or upload an evidence bundle — for example one downloaded from a run&apos;s page — and the engine evaluates it with the rules <code>runwarden decide</code> uses. A downloaded
        file holding several bundles is evaluated here by its first; <code>runwarden decide FILE</code> gives a verdict for each.
      </PageHeader>
      <EvaluateForm />
    </>
  );
}
