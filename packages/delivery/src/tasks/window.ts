import type { FieldIssue } from '@gatehook/core/errors';

/** How far in the future `until` may be (clock skew between the caller and us). */
export const TASK_UNTIL_SLACK_MS = 60_000;

const DAY_MS = 86_400_000;

/**
 * The window rules of CONTRACT 11: `since` before `until`, `until` no more than a minute in the future, `since`
 * no older than the delivery retention (nothing older is kept). Returns the issues, each naming its field.
 */
export function checkTaskWindow(window: { since: Date; until: Date }, now: Date, retentionDays: number): FieldIssue[] {
  const issues: FieldIssue[] = [];
  if (window.since.getTime() < now.getTime() - retentionDays * DAY_MS) {
    issues.push({
      path: 'since',
      message: `must be within the last ${retentionDays} days (delivery history retention)`,
    });
  }
  if (window.until.getTime() > now.getTime() + TASK_UNTIL_SLACK_MS) {
    issues.push({ path: 'until', message: 'must not be more than a minute in the future' });
  }
  if (window.since.getTime() >= window.until.getTime()) {
    issues.push({ path: 'since', message: 'must be before until' });
  }
  return issues;
}
