-- AlterTable
ALTER TABLE "controller_processes" ADD COLUMN     "provider_answered_at" TIMESTAMPTZ(3),
ADD COLUMN     "provider_confirmed_at" TIMESTAMPTZ(3);

-- AlterTable
ALTER TABLE "runs" ADD COLUMN     "rate_limit_waits" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN     "rate_limited_since" TIMESTAMPTZ(3);

-- CreateTable
CREATE TABLE "provider_outages" (
    "id" UUID NOT NULL,
    "instance_id" TEXT NOT NULL,
    "provider" TEXT NOT NULL,
    "started_at" TIMESTAMPTZ(3) NOT NULL,
    "opened_by" TEXT NOT NULL,
    "confirmed_at" TIMESTAMPTZ(3),
    "last_error" TEXT,
    "started_alert_at" TIMESTAMPTZ(3),
    "ended_at" TIMESTAMPTZ(3),
    "ended_by" TEXT,
    "ended_alert_at" TIMESTAMPTZ(3),
    "decisions" JSONB NOT NULL DEFAULT '[]',
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "provider_outages_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "provider_outages_instance_id_started_at_idx" ON "provider_outages"("instance_id", "started_at");

-- CreateIndex
CREATE UNIQUE INDEX "provider_outages_one_open" ON "provider_outages"("instance_id") WHERE (ended_at IS NULL);
