"use client";

import dynamic from "next/dynamic";
import { useRef, useState } from "react";
import type { RouterInputs } from "@/trpc/types";
import type { BulkPlanKind } from "@/server/shared/bulk";
import { usePermission } from "../auth/access";
import { buttonClass } from "../ui";

// The preview-and-confirm dialog loads on the first click (or as the pointer or focus reaches the button).
const loadBulkDialog = () => import("./bulk-dialog");
const BulkDialog = dynamic(() => loadBulkDialog().then((m) => m.BulkDialog), { ssr: false });
const prefetchBulkDialog = () => void loadBulkDialog();

export type BulkFilter = RouterInputs["plans"]["preview"]["filter"];

/**
 * "Retry all 37 with CODE", "Retry these…", "Cancel these…" (docs/rules.md §2.11): each click
 * opens a fresh preview of the set (a plan is a snapshot), which the dialog then confirms.
 */
export function BulkAction({ kind, filter, label, title }: { kind: BulkPlanKind; filter: BulkFilter; label: string; title: string }) {
  const can = usePermission("plans.confirm", kind === "retry" ? "Retry runs in bulk" : "Cancel runs in bulk");
  const [open, setOpen] = useState(false);
  // A new preview each time the dialog opens.
  const [opened, setOpened] = useState(0);
  const trigger = useRef<HTMLButtonElement>(null);
  return (
    <>
      <button
        ref={trigger}
        type="button"
        className={kind === "cancel" ? buttonClass.danger : buttonClass.secondary}
        disabled={!can.allowed}
        title={can.reason ?? undefined}
        aria-haspopup="dialog"
        aria-expanded={open}
        onPointerEnter={prefetchBulkDialog}
        onFocus={prefetchBulkDialog}
        onClick={() => {
          setOpened((n) => n + 1);
          setOpen(true);
        }}
      >
        {label}
      </button>
      {opened > 0 ? <BulkDialog key={opened} open={open} onOpenChange={setOpen} kind={kind} filter={filter} title={title} trigger={trigger} /> : null}
    </>
  );
}
