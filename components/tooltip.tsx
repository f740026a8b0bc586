"use client";

import { useEffect, useId, useRef, useState } from "react";
import { createPortal } from "react-dom";

const DELAY_MS = 200;
const GAP_PX = 4;

export interface TooltipTriggerProps {
  ref: React.RefObject<HTMLAnchorElement | null>;
  onPointerEnter: () => void;
  onPointerLeave: () => void;
  onPointerDown: () => void;
  onFocus: () => void;
  onBlur: () => void;
  onKeyDown: (e: React.KeyboardEvent) => void;
  "aria-describedby": string | undefined;
}

/**
 * A line of text about a link: on hover after 200 ms, at once on focus; gone on leave, blur,
 * a click, Escape or a scroll. Below the link, above it near the window's bottom. Ours, not
 * radix's tooltip: that one, with its popper, was ~15 KB gzipped of the runs page (docs/decisions/0003-cost-at-scale.md: ≤ 200 KB),
 * and a table's codes need none of its collision handling.
 */
export function Tooltip({ content, children }: { content: string; children: (trigger: TooltipTriggerProps) => React.ReactNode }) {
  const id = useId();
  const ref = useRef<HTMLAnchorElement>(null);
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  const [at, setAt] = useState<DOMRect | null>(null);
  // A click focuses the link too: that focus is not a request for the tooltip.
  const pressed = useRef(false);

  const show = (delay: number) => {
    clearTimeout(timer.current);
    timer.current = setTimeout(() => ref.current && setAt(ref.current.getBoundingClientRect()), delay);
  };
  const hide = () => {
    clearTimeout(timer.current);
    setAt(null);
  };
  useEffect(() => () => clearTimeout(timer.current), []);
  useEffect(() => {
    if (!at) return;
    // Fixed to where the link was: a scroll would leave it behind.
    window.addEventListener("scroll", hide, { capture: true, once: true });
    return () => window.removeEventListener("scroll", hide, { capture: true });
  }, [at]);

  const below = at ? at.bottom + 80 < window.innerHeight : true;
  return (
    <>
      {children({
        ref,
        onPointerEnter: () => show(DELAY_MS),
        onPointerLeave: hide,
        onPointerDown: () => {
          pressed.current = true;
          hide();
        },
        onFocus: () => {
          if (!pressed.current) show(0);
        },
        onBlur: () => {
          pressed.current = false;
          hide();
        },
        onKeyDown: (e) => {
          if (e.key === "Escape") hide();
        },
        "aria-describedby": at ? id : undefined,
      })}
      {at
        ? createPortal(
            <div
              id={id}
              role="tooltip"
              style={{ position: "fixed", left: at.left + at.width / 2, ...(below ? { top: at.bottom + GAP_PX + 5 } : { bottom: window.innerHeight - at.top + GAP_PX + 5 }) }}
              className="pointer-events-none z-50 max-w-sm -translate-x-1/2 rounded bg-zinc-900 px-3 py-2 text-sm text-white shadow-lg dark:bg-zinc-100 dark:text-zinc-900"
            >
              {content}
              <svg width="10" height="5" viewBox="0 0 30 10" preserveAspectRatio="none" aria-hidden className={`absolute left-1/2 -translate-x-1/2 fill-zinc-900 dark:fill-zinc-100 ${below ? "bottom-full rotate-180" : "top-full"}`}>
                <polygon points="0,0 30,0 15,10" />
              </svg>
            </div>,
            document.body,
          )
        : null}
    </>
  );
}
