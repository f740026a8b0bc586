import { defaultShouldDehydrateQuery, isServer, MutationCache, QueryCache, QueryClient } from "@tanstack/react-query";
import superjson from "superjson";
import { isClientError } from "./errors";

/** `onError` sees every failed query and mutation (the browser uses it to notice a lost session). */
export function makeQueryClient(onError?: (error: unknown) => void) {
  return new QueryClient({
    queryCache: onError ? new QueryCache({ onError }) : undefined,
    mutationCache: onError ? new MutationCache({ onError }) : undefined,
    defaultOptions: {
      queries: {
        staleTime: 5_000,
        // One retry for a network blip or a 5xx; a 4xx is the answer and is shown as it is.
        // (The server's prefetch never retries: the page renders what it got.)
        retry: (failures, error) => !isServer && failures < 1 && !isClientError(error),
        refetchOnWindowFocus: (query) => !(query.state.status === "error" && isClientError(query.state.error)),
      },
      dehydrate: {
        serializeData: superjson.serialize,
        // Only answered queries go out with the page. A pending one would stream its answer, and
        // whether it had arrived when React hydrated (useQuery reads it at once if so) was a race
        // the server's render could lose: a hydration mismatch, the page rendered a second time.
        shouldDehydrateQuery: defaultShouldDehydrateQuery,
      },
      hydrate: { deserializeData: superjson.deserialize },
    },
  });
}
