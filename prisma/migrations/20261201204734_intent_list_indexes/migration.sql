-- CreateIndex
CREATE INDEX "sandbox_creation_intents_instance_id_created_at_operation_i_idx" ON "sandbox_creation_intents"("instance_id", "created_at", "operation_id");

-- CreateIndex
CREATE INDEX "sandbox_creation_intents_instance_id_status_created_at_oper_idx" ON "sandbox_creation_intents"("instance_id", "status", "created_at", "operation_id");
