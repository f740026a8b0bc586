-- Expand: a nullable column on runs (an older controller's inserts leave it NULL; it reads
-- no such field) and two new tables no older version knows (docs/api.md). A lock that cannot be
-- had within 5 s gives up rather than queue every controller's run updates behind it.
SET lock_timeout = '5s';

-- AlterTable
ALTER TABLE "runs" ADD COLUMN     "external_id" TEXT;

-- CreateTable
CREATE TABLE "api_tokens" (
    "id" UUID NOT NULL,
    "instance_id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "prefix" TEXT NOT NULL,
    "secret_hash" TEXT NOT NULL,
    "role" TEXT NOT NULL,
    "companies" TEXT[],
    "created_by" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "revoked_at" TIMESTAMPTZ(3),
    "revoked_by" TEXT,
    "last_used_at" TIMESTAMPTZ(3),
    "last_used_ip" TEXT,

    CONSTRAINT "api_tokens_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "run_submissions" (
    "company_id" TEXT NOT NULL,
    "key" TEXT NOT NULL,
    "body_hash" TEXT NOT NULL,
    "run_id" UUID NOT NULL,
    "submitter" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "run_submissions_pkey" PRIMARY KEY ("company_id","key")
);

-- CreateIndex
CREATE UNIQUE INDEX "api_tokens_secret_hash_key" ON "api_tokens"("secret_hash");

-- CreateIndex
CREATE UNIQUE INDEX "api_tokens_instance_id_name_key" ON "api_tokens"("instance_id", "name");
