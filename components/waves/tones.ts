import type { Tone } from "../ui";

export function waveTone(status: string): Tone {
  switch (status) {
    case "passed":
      return "good";
    case "failed":
      return "bad";
    case "running":
      return "info";
    case "aborted":
      return "warn";
    default:
      return "neutral";
  }
}
