import { defaultShouldDehydrateQuery, MutationCache, QueryCache, QueryClient } from "@tanstack/react-query";
import superjson from "superjson";

/** `onError` sees every failed query and mutation (the browser uses it to notice a lost session). */
export function makeQueryClient(onError?: (error: unknown) => void) {
  return new QueryClient({
    queryCache: onError ? new QueryCache({ onError }) : undefined,
    mutationCache: onError ? new MutationCache({ onError }) : undefined,
    defaultOptions: {
      queries: { staleTime: 5_000, retry: 1 },
      dehydrate: {
        serializeData: superjson.serialize,
        shouldDehydrateQuery: (query) => defaultShouldDehydrateQuery(query) || query.state.status === "pending",
      },
      hydrate: { deserializeData: superjson.deserialize },
    },
  });
}
