-- CreateIndex
CREATE INDEX "runs_executing_by_instance" ON "runs"("instance_id", "id") WHERE (status IN ('starting', 'running', 'suspended'));
