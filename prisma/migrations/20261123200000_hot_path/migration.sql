-- AlterTable
ALTER TABLE "deliveries" ADD COLUMN     "throttled_streak" INTEGER NOT NULL DEFAULT 0;
