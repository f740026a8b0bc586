-- AlterTable
ALTER TABLE "bulk_plan_items" ADD COLUMN     "teardown" TEXT;

-- AlterTable
ALTER TABLE "sandbox_inventory_passes" ADD COLUMN     "alert_rate_per_hour" DOUBLE PRECISION;
