-- CreateTable
CREATE TABLE "sandbox_inventory" (
    "instance_id" TEXT NOT NULL,
    "sandbox_id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "company_id" TEXT,
    "labels" JSONB NOT NULL,
    "state" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL,
    "cpu" DOUBLE PRECISION NOT NULL,
    "memory" DOUBLE PRECISION NOT NULL,
    "disk" DOUBLE PRECISION NOT NULL,
    "hourly_cost" DOUBLE PRECISION NOT NULL,
    "verdict" TEXT,
    "orphan_since" TIMESTAMPTZ(3),
    "accrued_cost" DOUBLE PRECISION,
    "seen_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "sandbox_inventory_pkey" PRIMARY KEY ("instance_id","sandbox_id")
);

-- CreateTable
CREATE TABLE "sandbox_inventory_passes" (
    "instance_id" TEXT NOT NULL,
    "listed_at" TIMESTAMPTZ(3) NOT NULL,
    "sandboxes" INTEGER NOT NULL,
    "took_ms" INTEGER NOT NULL,

    CONSTRAINT "sandbox_inventory_passes_pkey" PRIMARY KEY ("instance_id")
);

-- CreateIndex
CREATE INDEX "sandbox_inventory_page_idx" ON "sandbox_inventory"("instance_id", "accrued_cost" DESC, "hourly_cost" DESC, "name" DESC, "sandbox_id" DESC);

-- CreateIndex
CREATE INDEX "sandbox_inventory_verdict_idx" ON "sandbox_inventory"("instance_id", "verdict");
