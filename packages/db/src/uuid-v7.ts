/** UUIDv7 arithmetic: a UUIDv7's first 48 bits are its creation time in Unix milliseconds. */

/** The lowest UUIDv7 of an instant: its Unix milliseconds in the first 48 bits, every other bit zero. */
export function uuidV7Floor(ms: number): string {
  const hex = Math.floor(ms).toString(16).padStart(12, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-0000-0000-000000000000`;
}

/** The instant in the first 48 bits of a UUID (the creation time of a UUIDv7). */
export function uuidV7Time(uuid: string): number {
  return parseInt(uuid.replace(/-/g, '').slice(0, 12), 16);
}
