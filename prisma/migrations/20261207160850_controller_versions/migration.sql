-- Expand: three nullable columns an older controller neither reads nor writes (its inserts
-- leave them NULL); a lock that cannot be had within 5 s gives up rather than queue every
-- controller's heartbeat behind it.
SET lock_timeout = '5s';

-- AlterTable
ALTER TABLE "controller_processes" ADD COLUMN     "runner_digest" TEXT,
ADD COLUMN     "runner_protocol" INTEGER,
ADD COLUMN     "version" TEXT;
