-- DropIndex
DROP INDEX "runs_status_created_at_idx";

-- DropIndex
DROP INDEX "runs_failure_code_created_at_idx";

-- DropIndex
DROP INDEX "runs_company_id_created_at_idx";

-- CreateIndex
CREATE INDEX "runs_status_created_at_id_idx" ON "runs"("status", "created_at", "id");

-- CreateIndex
CREATE INDEX "runs_outcome_created_at_id_idx" ON "runs"("outcome", "created_at", "id");

-- CreateIndex
CREATE INDEX "runs_failure_code_created_at_id_idx" ON "runs"("failure_code", "created_at", "id");

-- CreateIndex
CREATE INDEX "runs_provider_created_at_id_idx" ON "runs"("provider", "created_at", "id");

-- CreateIndex
CREATE INDEX "runs_company_id_created_at_id_idx" ON "runs"("company_id", "created_at", "id");

-- CreateIndex
CREATE INDEX "runs_company_id_status_created_at_id_idx" ON "runs"("company_id", "status", "created_at", "id");

-- CreateIndex
CREATE INDEX "runs_company_id_outcome_created_at_id_idx" ON "runs"("company_id", "outcome", "created_at", "id");

-- CreateIndex
CREATE INDEX "runs_company_id_provider_target_created_at_id_idx" ON "runs"("company_id", "provider", "target", "created_at", "id");

-- CreateIndex
CREATE INDEX "environment_leases_sandbox_name_idx" ON "environment_leases"("sandbox_name");

-- CreateIndex
CREATE INDEX "proofs_claim_id_idx" ON "proofs"("claim_id");

-- Task search: `ILIKE '%…%'` reads a trigram index instead of every row (issue 13). pg_trgm
-- ships with PostgreSQL and is a trusted extension: the database owner may create it.
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE INDEX "runs_task_id_trgm_idx" ON "runs" USING gin ("task_id" gin_trgm_ops);
