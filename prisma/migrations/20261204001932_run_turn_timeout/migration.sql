-- AlterTable
ALTER TABLE "runs" ADD COLUMN     "turn_timeout_ms" INTEGER;
