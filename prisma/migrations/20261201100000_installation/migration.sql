-- One row per database: the instance id generated on first use and kept (DOMAIN.md §2.9).
CREATE TABLE "installation" (
    "id" INTEGER NOT NULL DEFAULT 1,
    "instance_id" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "installation_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "installation_single_row" CHECK ("id" = 1)
);
