-- CreateSchema
CREATE SCHEMA IF NOT EXISTS "public";

-- CreateEnum
CREATE TYPE "RunStatus" AS ENUM ('queued', 'starting', 'running', 'suspended', 'succeeded', 'failed', 'cancelled');

-- CreateEnum
CREATE TYPE "OutcomeClass" AS ENUM ('retryable_failure', 'terminal_failure');

-- CreateEnum
CREATE TYPE "RunOwner" AS ENUM ('agent', 'board');

-- CreateEnum
CREATE TYPE "ExecutionTarget" AS ENUM ('local', 'remote');

-- CreateEnum
CREATE TYPE "SandboxMode" AS ENUM ('per_turn', 'warm');

-- CreateEnum
CREATE TYPE "RecoveryMode" AS ENUM ('bootstrap_retry', 'exact_checkpoint_resume', 'ambiguous_state');

-- CreateEnum
CREATE TYPE "RecoveryState" AS ENUM ('awaiting_evidence', 'awaiting_runner_reattach', 'resuming_session', 'bootstrap_incomplete', 'blocked');

-- CreateEnum
CREATE TYPE "AcquisitionOutcome" AS ENUM ('created', 'resumed', 'replacement');

-- CreateEnum
CREATE TYPE "LeaseStatus" AS ENUM ('active', 'pending_cleanup', 'released', 'expired', 'failed', 'retained');

-- CreateEnum
CREATE TYPE "IntentStatus" AS ENUM ('pending', 'committed', 'reclaimed', 'resolved_absent', 'manual_reconciliation');

-- CreateEnum
CREATE TYPE "ClaimKind" AS ENUM ('reattach_remote_runner', 'staged_attachment', 'resume_dead_runner', 'bootstrap_incomplete');

-- CreateEnum
CREATE TYPE "RestartKind" AS ENUM ('hot', 'hard', 'graceful');

-- CreateEnum
CREATE TYPE "WaveStatus" AS ENUM ('running', 'passed', 'failed', 'aborted');

-- CreateTable
CREATE TABLE "instances" (
    "id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "create_prefix" TEXT NOT NULL DEFAULT 'rw',
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "instances_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "controller_processes" (
    "boot_id" TEXT NOT NULL,
    "instance_id" TEXT NOT NULL,
    "role" TEXT NOT NULL DEFAULT 'controller',
    "pid" INTEGER NOT NULL,
    "started_at" TIMESTAMPTZ(3) NOT NULL,
    "hostname" TEXT NOT NULL,
    "pid_space" TEXT NOT NULL,
    "home" TEXT,
    "booted_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "stopped_at" TIMESTAMPTZ(3),
    "stop_reason" TEXT,

    CONSTRAINT "controller_processes_pkey" PRIMARY KEY ("boot_id")
);

-- CreateTable
CREATE TABLE "runs" (
    "id" UUID NOT NULL,
    "instance_id" TEXT NOT NULL,
    "company_id" TEXT NOT NULL,
    "task_id" TEXT NOT NULL,
    "agent" TEXT NOT NULL,
    "provider" TEXT NOT NULL,
    "target" "ExecutionTarget" NOT NULL,
    "sandbox_mode" "SandboxMode" NOT NULL,
    "status" "RunStatus" NOT NULL DEFAULT 'queued',
    "outcome" "OutcomeClass",
    "failure_code" TEXT,
    "failure_detail" TEXT,
    "owner" "RunOwner" NOT NULL DEFAULT 'agent',
    "next_action" TEXT,
    "can_retry" BOOLEAN NOT NULL DEFAULT false,
    "provider_attempts" INTEGER NOT NULL DEFAULT 0,
    "max_provider_attempts" INTEGER NOT NULL DEFAULT 3,
    "recovery_mode" "RecoveryMode",
    "recovery_state" "RecoveryState",
    "retry_at" TIMESTAMPTZ(3),
    "previous_run_id" UUID,
    "runner_instance_id" TEXT,
    "session_id" TEXT,
    "checkpoint" JSONB,
    "turns_planned" INTEGER NOT NULL DEFAULT 3,
    "turns_done" INTEGER NOT NULL DEFAULT 0,
    "faults" JSONB,
    "executor_boot_id" TEXT,
    "heartbeat_at" TIMESTAMPTZ(3),
    "last_runner_state" JSONB,
    "last_runner_state_at" TIMESTAMPTZ(3),
    "wave_id" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,
    "started_at" TIMESTAMPTZ(3),
    "finished_at" TIMESTAMPTZ(3),

    CONSTRAINT "runs_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "run_events" (
    "id" BIGSERIAL NOT NULL,
    "run_id" UUID NOT NULL,
    "type" TEXT NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "boot_id" TEXT,
    "data" JSONB,

    CONSTRAINT "run_events_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "environment_leases" (
    "id" UUID NOT NULL,
    "run_id" UUID,
    "instance_id" TEXT NOT NULL,
    "company_id" TEXT NOT NULL,
    "intent_id" TEXT,
    "provider" TEXT NOT NULL,
    "provider_lease_id" TEXT,
    "sandbox_name" TEXT,
    "remote_cwd" TEXT,
    "acquisition_outcome" "AcquisitionOutcome" NOT NULL,
    "status" "LeaseStatus" NOT NULL DEFAULT 'active',
    "cleanup_status" TEXT,
    "cleanup_attempts" INTEGER NOT NULL DEFAULT 0,
    "next_cleanup_at" TIMESTAMPTZ(3),
    "last_cleanup_error" TEXT,
    "claim_attempt_id" TEXT,
    "claim_record" JSONB,
    "fenced_until" TIMESTAMPTZ(3),
    "termination_receipt" JSONB,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,
    "ended_at" TIMESTAMPTZ(3),

    CONSTRAINT "environment_leases_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "sandbox_creation_intents" (
    "operation_id" TEXT NOT NULL,
    "instance_id" TEXT NOT NULL,
    "company_id" TEXT NOT NULL,
    "run_id" TEXT NOT NULL,
    "creation_name" TEXT NOT NULL,
    "labels" JSONB NOT NULL,
    "creator_boot_id" TEXT,
    "creator" JSONB,
    "status" "IntentStatus" NOT NULL DEFAULT 'pending',
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "last_inspection" JSONB,
    "last_inspected_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "settle_deadline" TIMESTAMPTZ(3) NOT NULL,
    "next_attempt_at" TIMESTAMPTZ(3) NOT NULL,
    "resolved_at" TIMESTAMPTZ(3),
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "sandbox_creation_intents_pkey" PRIMARY KEY ("operation_id")
);

-- CreateTable
CREATE TABLE "recovery_claims" (
    "id" UUID NOT NULL,
    "run_id" UUID NOT NULL,
    "kind" "ClaimKind" NOT NULL,
    "provider_lease_id" TEXT,
    "remote_cwd" TEXT,
    "runner_instance_id" TEXT,
    "session_id" TEXT,
    "controller_boot_id" TEXT NOT NULL,
    "restart_kind" "RestartKind" NOT NULL,
    "disposition" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "decided_at" TIMESTAMPTZ(3),

    CONSTRAINT "recovery_claims_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "proofs" (
    "id" UUID NOT NULL,
    "kind" TEXT NOT NULL,
    "verdict" TEXT NOT NULL,
    "code" TEXT,
    "reason" TEXT,
    "checks" JSONB NOT NULL,
    "evidence" JSONB NOT NULL,
    "output" JSONB NOT NULL,
    "run_id" UUID,
    "claim_id" UUID,
    "intent_id" TEXT,
    "lease_id" UUID,
    "sandbox_id" TEXT,
    "evaluated_by" TEXT NOT NULL,
    "evaluated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "proofs_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "chaos_waves" (
    "id" TEXT NOT NULL,
    "seed" INTEGER NOT NULL,
    "instance_id" TEXT NOT NULL,
    "company_id" TEXT,
    "status" "WaveStatus" NOT NULL DEFAULT 'running',
    "passed" BOOLEAN,
    "plan" JSONB NOT NULL,
    "config" JSONB NOT NULL,
    "orphan_sandboxes" JSONB NOT NULL DEFAULT '[]',
    "summary" JSONB,
    "report" JSONB,
    "imported" BOOLEAN NOT NULL DEFAULT false,
    "started_at" TIMESTAMPTZ(3) NOT NULL,
    "finished_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "chaos_waves_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "chaos_wave_tasks" (
    "id" UUID NOT NULL,
    "wave_id" TEXT NOT NULL,
    "key" TEXT NOT NULL,
    "task_id" TEXT NOT NULL,
    "passed" BOOLEAN NOT NULL,
    "restart_crossing" BOOLEAN NOT NULL,
    "failure_codes" TEXT[],
    "retries_needed" INTEGER NOT NULL,
    "run_ids" TEXT[],
    "detail" JSONB,

    CONSTRAINT "chaos_wave_tasks_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "chaos_wave_checks" (
    "id" UUID NOT NULL,
    "wave_task_id" UUID NOT NULL,
    "check" TEXT NOT NULL,
    "ok" BOOLEAN NOT NULL,
    "evidence" JSONB NOT NULL,

    CONSTRAINT "chaos_wave_checks_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "audit_entries" (
    "id" BIGSERIAL NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "actor" TEXT NOT NULL,
    "role" TEXT NOT NULL,
    "action" TEXT NOT NULL,
    "target_type" TEXT NOT NULL,
    "target_id" TEXT,
    "company_id" TEXT,
    "input" JSONB,
    "outcome" TEXT NOT NULL,
    "detail" JSONB,

    CONSTRAINT "audit_entries_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "controller_processes_instance_id_last_seen_at_idx" ON "controller_processes"("instance_id", "last_seen_at");

-- CreateIndex
CREATE UNIQUE INDEX "runs_previous_run_id_key" ON "runs"("previous_run_id");

-- CreateIndex
CREATE INDEX "runs_status_created_at_idx" ON "runs"("status", "created_at");

-- CreateIndex
CREATE INDEX "runs_failure_code_created_at_idx" ON "runs"("failure_code", "created_at");

-- CreateIndex
CREATE INDEX "runs_company_id_created_at_idx" ON "runs"("company_id", "created_at");

-- CreateIndex
CREATE INDEX "runs_created_at_id_idx" ON "runs"("created_at", "id");

-- CreateIndex
CREATE INDEX "runs_company_id_task_id_idx" ON "runs"("company_id", "task_id");

-- CreateIndex
CREATE INDEX "runs_status_retry_at_idx" ON "runs"("status", "retry_at");

-- CreateIndex
CREATE INDEX "runs_wave_id_idx" ON "runs"("wave_id");

-- CreateIndex
CREATE UNIQUE INDEX "runs_one_active_per_task" ON "runs"("company_id", "task_id") WHERE (status IN ('queued', 'starting', 'running', 'suspended'));

-- CreateIndex
CREATE INDEX "run_events_run_id_id_idx" ON "run_events"("run_id", "id");

-- CreateIndex
CREATE UNIQUE INDEX "environment_leases_intent_id_key" ON "environment_leases"("intent_id");

-- CreateIndex
CREATE INDEX "environment_leases_status_id_idx" ON "environment_leases"("status", "id");

-- CreateIndex
CREATE INDEX "environment_leases_status_next_cleanup_at_idx" ON "environment_leases"("status", "next_cleanup_at");

-- CreateIndex
CREATE INDEX "environment_leases_run_id_idx" ON "environment_leases"("run_id");

-- CreateIndex
CREATE INDEX "environment_leases_provider_lease_id_idx" ON "environment_leases"("provider_lease_id");

-- CreateIndex
CREATE UNIQUE INDEX "sandbox_creation_intents_creation_name_key" ON "sandbox_creation_intents"("creation_name");

-- CreateIndex
CREATE INDEX "sandbox_creation_intents_instance_id_status_operation_id_idx" ON "sandbox_creation_intents"("instance_id", "status", "operation_id");

-- CreateIndex
CREATE INDEX "sandbox_creation_intents_status_next_attempt_at_idx" ON "sandbox_creation_intents"("status", "next_attempt_at");

-- CreateIndex
CREATE INDEX "sandbox_creation_intents_run_id_idx" ON "sandbox_creation_intents"("run_id");

-- CreateIndex
CREATE INDEX "recovery_claims_run_id_created_at_idx" ON "recovery_claims"("run_id", "created_at");

-- CreateIndex
CREATE INDEX "proofs_run_id_evaluated_at_idx" ON "proofs"("run_id", "evaluated_at");

-- CreateIndex
CREATE INDEX "proofs_intent_id_evaluated_at_idx" ON "proofs"("intent_id", "evaluated_at");

-- CreateIndex
CREATE INDEX "proofs_lease_id_evaluated_at_idx" ON "proofs"("lease_id", "evaluated_at");

-- CreateIndex
CREATE INDEX "proofs_kind_evaluated_at_idx" ON "proofs"("kind", "evaluated_at");

-- CreateIndex
CREATE INDEX "chaos_waves_started_at_idx" ON "chaos_waves"("started_at");

-- CreateIndex
CREATE UNIQUE INDEX "chaos_wave_tasks_wave_id_key_key" ON "chaos_wave_tasks"("wave_id", "key");

-- CreateIndex
CREATE UNIQUE INDEX "chaos_wave_checks_wave_task_id_check_key" ON "chaos_wave_checks"("wave_task_id", "check");

-- CreateIndex
CREATE INDEX "audit_entries_at_idx" ON "audit_entries"("at");

-- CreateIndex
CREATE INDEX "audit_entries_actor_at_idx" ON "audit_entries"("actor", "at");

-- CreateIndex
CREATE INDEX "audit_entries_action_at_idx" ON "audit_entries"("action", "at");

-- CreateIndex
CREATE INDEX "audit_entries_target_type_target_id_idx" ON "audit_entries"("target_type", "target_id");

-- AddForeignKey
ALTER TABLE "controller_processes" ADD CONSTRAINT "controller_processes_instance_id_fkey" FOREIGN KEY ("instance_id") REFERENCES "instances"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "runs" ADD CONSTRAINT "runs_instance_id_fkey" FOREIGN KEY ("instance_id") REFERENCES "instances"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "runs" ADD CONSTRAINT "runs_previous_run_id_fkey" FOREIGN KEY ("previous_run_id") REFERENCES "runs"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "run_events" ADD CONSTRAINT "run_events_run_id_fkey" FOREIGN KEY ("run_id") REFERENCES "runs"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "environment_leases" ADD CONSTRAINT "environment_leases_run_id_fkey" FOREIGN KEY ("run_id") REFERENCES "runs"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "environment_leases" ADD CONSTRAINT "environment_leases_intent_id_fkey" FOREIGN KEY ("intent_id") REFERENCES "sandbox_creation_intents"("operation_id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "recovery_claims" ADD CONSTRAINT "recovery_claims_run_id_fkey" FOREIGN KEY ("run_id") REFERENCES "runs"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "proofs" ADD CONSTRAINT "proofs_run_id_fkey" FOREIGN KEY ("run_id") REFERENCES "runs"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "proofs" ADD CONSTRAINT "proofs_claim_id_fkey" FOREIGN KEY ("claim_id") REFERENCES "recovery_claims"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "chaos_wave_tasks" ADD CONSTRAINT "chaos_wave_tasks_wave_id_fkey" FOREIGN KEY ("wave_id") REFERENCES "chaos_waves"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "chaos_wave_checks" ADD CONSTRAINT "chaos_wave_checks_wave_task_id_fkey" FOREIGN KEY ("wave_task_id") REFERENCES "chaos_wave_tasks"("id") ON DELETE CASCADE ON UPDATE CASCADE;
