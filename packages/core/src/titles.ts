/** Turns an action name into a title: `anomaly_finding.created` → `Anomaly Finding Created`. */
export function actionTitle(action: string): string {
  return action
    .split(/[._]/)
    .filter((part) => part.length > 0)
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join(' ');
}
