/**
 * Masks a webhook URL as `<origin>/…<last 4 characters>` (CONTRACT section 4). The URL is a credential, so this
 * is the only form in which it appears in responses, logs, audit diffs and delivery errors.
 */
export function maskUrl(url: string): string {
  const tail = [...url].slice(-4).join('');
  let origin: string;
  try {
    origin = new URL(url).origin;
  } catch {
    origin = 'invalid-url';
  }
  return `${origin}/…${tail}`;
}
