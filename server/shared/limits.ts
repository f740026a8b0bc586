/**
 * Lengths the list filters accept. The server's input schemas and the pages' inputs
 * (`maxLength`) read them from here, so a person cannot type what the server refuses.
 */
export const FILTER_MAX = {
  search: 200,
  companyId: 120,
  provider: 40,
  failureCode: 200,
  actor: 200,
  action: 100,
  targetType: 50,
  targetId: 200,
} as const;

/** The longest Cancel reason kept (§2.11): runs.cancel's input, the CLI and the dialog's textarea. */
export const CANCEL_REASON_MAX = 500;
