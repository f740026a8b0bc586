-- AlterTable
ALTER TABLE "runs" ADD COLUMN     "demo_sleep_ms" INTEGER;
