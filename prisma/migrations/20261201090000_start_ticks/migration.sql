ALTER TABLE "controller_processes" ADD COLUMN "start_ticks" BIGINT;
