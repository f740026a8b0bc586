ALTER TABLE "runs" ADD COLUMN "agent_command" TEXT;
