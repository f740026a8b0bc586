-- CreateIndex
CREATE INDEX "sandbox_creation_intents_instance_id_status_resolved_at_idx" ON "sandbox_creation_intents"("instance_id", "status", "resolved_at");
