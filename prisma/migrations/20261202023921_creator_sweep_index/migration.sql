-- CreateIndex
CREATE INDEX "sandbox_creation_intents_instance_id_status_creator_boot_id_idx" ON "sandbox_creation_intents"("instance_id", "status", "creator_boot_id", "operation_id");
