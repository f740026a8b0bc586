import { createLoader, parseAsString } from "nuqs/server";

/** The compared waves live in the address: a link reproduces the comparison. */
export const compareParams = { a: parseAsString, b: parseAsString };
export const loadCompareParams = createLoader(compareParams);
