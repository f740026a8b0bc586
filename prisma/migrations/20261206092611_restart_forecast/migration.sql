-- CreateTable
CREATE TABLE "forecasts" (
    "id" UUID NOT NULL,
    "instance_id" TEXT NOT NULL,
    "taken_by" TEXT NOT NULL,
    "taken_role" TEXT NOT NULL,
    "source" TEXT NOT NULL,
    "scope" JSONB NOT NULL,
    "wave_id" TEXT,
    "total" INTEGER NOT NULL,
    "continues" INTEGER NOT NULL,
    "ends" INTEGER NOT NULL,
    "operator" INTEGER NOT NULL,
    "duration_ms" INTEGER NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "forecasts_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "forecast_runs" (
    "forecast_id" UUID NOT NULL,
    "run_id" UUID NOT NULL,
    "prediction" TEXT NOT NULL,
    "path" TEXT,
    "code" TEXT,
    "owner" TEXT,
    "can_retry" BOOLEAN,
    "reason" TEXT NOT NULL,
    "proofs" JSONB NOT NULL,
    "evidence" JSONB NOT NULL,
    "executor_boot_id" TEXT,
    "executor_epoch" INTEGER NOT NULL,
    "status" TEXT NOT NULL,
    "phase" TEXT,
    "outcome" TEXT,
    "actual" JSONB,
    "checked_at" TIMESTAMPTZ(3),

    CONSTRAINT "forecast_runs_pkey" PRIMARY KEY ("forecast_id","run_id")
);

-- CreateIndex
CREATE INDEX "forecasts_instance_id_created_at_idx" ON "forecasts"("instance_id", "created_at");

-- CreateIndex
CREATE INDEX "forecast_runs_run_id_idx" ON "forecast_runs"("run_id");

-- CreateIndex
CREATE INDEX "forecast_runs_outcome_forecast_id_idx" ON "forecast_runs"("outcome", "forecast_id");

-- AddForeignKey
ALTER TABLE "forecast_runs" ADD CONSTRAINT "forecast_runs_forecast_id_fkey" FOREIGN KEY ("forecast_id") REFERENCES "forecasts"("id") ON DELETE CASCADE ON UPDATE CASCADE;
