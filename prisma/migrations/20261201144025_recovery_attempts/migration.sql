-- AlterTable
ALTER TABLE "runs" ADD COLUMN     "executor_epoch" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN     "recovery_attempts" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN     "recovery_errors" JSONB,
ADD COLUMN     "recovery_not_before" TIMESTAMPTZ(3);
