-- Recover/replay pacing (TASK_SEND_RATE): the task's send clock, kept with its cursor.
ALTER TABLE "webhook_tasks" ADD COLUMN "paced_until" TIMESTAMPTZ(3);
