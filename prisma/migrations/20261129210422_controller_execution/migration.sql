-- AlterTable
ALTER TABLE "runs" ADD COLUMN     "phase" TEXT,
ADD COLUMN     "restarts" INTEGER NOT NULL DEFAULT 0;

-- AlterTable
ALTER TABLE "environment_leases" ADD COLUMN     "turn" INTEGER;

-- CreateTable
CREATE TABLE "sweep_passes" (
    "id" UUID NOT NULL,
    "kind" TEXT NOT NULL,
    "instance_id" TEXT NOT NULL,
    "boot_id" TEXT NOT NULL,
    "trigger" TEXT NOT NULL DEFAULT 'interval',
    "started_at" TIMESTAMPTZ(3) NOT NULL,
    "finished_at" TIMESTAMPTZ(3),
    "judged" INTEGER NOT NULL DEFAULT 0,
    "pages" INTEGER NOT NULL DEFAULT 0,
    "verdicts" JSONB NOT NULL DEFAULT '{}',
    "reclaimed" INTEGER NOT NULL DEFAULT 0,
    "destroyed" INTEGER NOT NULL DEFAULT 0,
    "error" TEXT,

    CONSTRAINT "sweep_passes_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "sweep_passes_kind_started_at_idx" ON "sweep_passes"("kind", "started_at");

-- CreateIndex
CREATE INDEX "sweep_passes_started_at_idx" ON "sweep_passes"("started_at");
