-- CreateEnum
CREATE TYPE "BulkPlanKind" AS ENUM ('retry', 'cancel');

-- AlterTable
ALTER TABLE "runs" ADD COLUMN     "cancel_reason" TEXT,
ADD COLUMN     "cancelled_by" TEXT;

-- AlterTable
ALTER TABLE "environment_leases" ADD COLUMN     "auto_delete_minutes" INTEGER,
ADD COLUMN     "auto_stop_minutes" INTEGER;

-- CreateTable
CREATE TABLE "bulk_plans" (
    "id" UUID NOT NULL,
    "instance_id" TEXT NOT NULL,
    "kind" "BulkPlanKind" NOT NULL,
    "selector" JSONB NOT NULL,
    "scope" JSONB NOT NULL,
    "confirm_word" TEXT NOT NULL,
    "reason" TEXT,
    "created_by" TEXT NOT NULL,
    "created_role" TEXT NOT NULL,
    "total" INTEGER NOT NULL,
    "admitted" INTEGER NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "confirmed_at" TIMESTAMPTZ(3),
    "confirmed_by" TEXT,
    "finished_at" TIMESTAMPTZ(3),

    CONSTRAINT "bulk_plans_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "bulk_plan_items" (
    "plan_id" UUID NOT NULL,
    "run_id" UUID NOT NULL,
    "position" INTEGER NOT NULL,
    "admitted" BOOLEAN NOT NULL,
    "reason" TEXT,
    "refusal" TEXT,
    "result" TEXT,
    "result_reason" TEXT,
    "result_detail" TEXT,
    "successor_id" UUID,
    "done_at" TIMESTAMPTZ(3),

    CONSTRAINT "bulk_plan_items_pkey" PRIMARY KEY ("plan_id","run_id")
);

-- CreateTable
CREATE TABLE "alert_endpoints" (
    "id" UUID NOT NULL,
    "instance_id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "url" TEXT NOT NULL,
    "secret" TEXT NOT NULL,
    "events" TEXT[],
    "enabled" BOOLEAN NOT NULL DEFAULT true,
    "source" TEXT NOT NULL DEFAULT 'console',
    "created_by" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "alert_endpoints_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "alert_events" (
    "id" UUID NOT NULL,
    "instance_id" TEXT NOT NULL,
    "type" TEXT NOT NULL,
    "dedupe_key" TEXT NOT NULL,
    "payload" JSONB NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "alert_events_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "alert_deliveries" (
    "id" UUID NOT NULL,
    "event_id" UUID NOT NULL,
    "endpoint_id" UUID NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'pending',
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "next_attempt_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "claimed_until" TIMESTAMPTZ(3),
    "last_status" INTEGER,
    "last_error" TEXT,
    "delivered_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "alert_deliveries_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "bulk_plans_instance_id_created_at_idx" ON "bulk_plans"("instance_id", "created_at");

-- CreateIndex
CREATE INDEX "bulk_plan_items_run_id_idx" ON "bulk_plan_items"("run_id");

-- CreateIndex
CREATE INDEX "alert_endpoints_instance_id_idx" ON "alert_endpoints"("instance_id");

-- CreateIndex
CREATE UNIQUE INDEX "alert_events_dedupe_key_key" ON "alert_events"("dedupe_key");

-- CreateIndex
CREATE INDEX "alert_events_instance_id_created_at_idx" ON "alert_events"("instance_id", "created_at");

-- CreateIndex
CREATE INDEX "alert_deliveries_status_next_attempt_at_idx" ON "alert_deliveries"("status", "next_attempt_at");

-- CreateIndex
CREATE INDEX "alert_deliveries_endpoint_id_created_at_idx" ON "alert_deliveries"("endpoint_id", "created_at");

-- CreateIndex
CREATE UNIQUE INDEX "alert_deliveries_event_id_endpoint_id_key" ON "alert_deliveries"("event_id", "endpoint_id");

-- AddForeignKey
ALTER TABLE "bulk_plan_items" ADD CONSTRAINT "bulk_plan_items_plan_id_fkey" FOREIGN KEY ("plan_id") REFERENCES "bulk_plans"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "alert_deliveries" ADD CONSTRAINT "alert_deliveries_event_id_fkey" FOREIGN KEY ("event_id") REFERENCES "alert_events"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "alert_deliveries" ADD CONSTRAINT "alert_deliveries_endpoint_id_fkey" FOREIGN KEY ("endpoint_id") REFERENCES "alert_endpoints"("id") ON DELETE CASCADE ON UPDATE CASCADE;
