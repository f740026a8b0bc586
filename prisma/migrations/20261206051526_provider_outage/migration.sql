-- AlterTable
ALTER TABLE "controller_processes" ADD COLUMN     "provider_last_error" TEXT,
ADD COLUMN     "provider_next_probe_at" TIMESTAMPTZ(3),
ADD COLUMN     "provider_unavailable_since" TIMESTAMPTZ(3);

-- AlterTable
ALTER TABLE "runs" ADD COLUMN     "provider_wait_since" TIMESTAMPTZ(3);
