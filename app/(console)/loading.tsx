import { Loading } from "@/components/ui";

export default function PageLoading() {
  return <Loading label="Loading…" />;
}
