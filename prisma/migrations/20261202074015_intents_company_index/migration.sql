-- CreateIndex
CREATE INDEX "sandbox_creation_intents_instance_id_company_id_created_at__idx" ON "sandbox_creation_intents"("instance_id", "company_id", "created_at", "operation_id");
