import { z } from 'zod';
import { AppError } from '@gatehook/core/errors';

/** Position after the last item of a page, ordered by (created_at, id). Opaque to clients. */
export interface Cursor {
  createdAt: Date;
  id: string;
}

const cursorSchema = z.object({ c: z.iso.datetime(), i: z.uuid() });

/** Query fields shared by every list route. */
export const pageQuery = {
  limit: z.coerce.number().int().min(1).max(100).default(50),
  cursor: z.string().max(200).optional(),
};

function encode(fields: Record<string, string>): string {
  return Buffer.from(JSON.stringify(fields)).toString('base64url');
}

function decode<T>(value: string, schema: z.ZodType<T>): T {
  try {
    return schema.parse(JSON.parse(Buffer.from(value, 'base64url').toString('utf8')));
  } catch {
    throw new AppError('bad_request', 'Invalid query parameter', [{ path: 'cursor', message: 'not a cursor returned by this API' }]);
  }
}

export function encodeCursor(cursor: Cursor): string {
  return encode({ c: cursor.createdAt.toISOString(), i: cursor.id });
}

/** Decodes a cursor from the query string, or throws 400 naming `cursor`. */
export function decodeCursor(value: string | undefined): Cursor | undefined {
  if (value === undefined) return undefined;
  const parsed = decode(value, cursorSchema);
  return { createdAt: new Date(parsed.c), id: parsed.i };
}

// Rows keyed by an increasing sequence number (delivery attempts) page by that number alone.
const sequenceCursorSchema = z.object({ s: z.string().regex(/^\d{1,19}$/) });

/** The cursor after a row numbered `sequence`, for lists ordered by a bigint key. */
export function encodeSequenceCursor(sequence: bigint): string {
  return encode({ s: sequence.toString() });
}

/** Decodes a sequence cursor from the query string, or throws 400 naming `cursor`. */
export function decodeSequenceCursor(value: string | undefined): bigint | undefined {
  if (value === undefined) return undefined;
  return BigInt(decode(value, sequenceCursorSchema).s);
}

/** Splits `limit + 1` rows fetched in descending sequence into a page and the cursor of the next one. */
export function sequencePage<T extends { id: bigint }>(rows: T[], limit: number): { items: T[]; nextCursor: string | null } {
  const items = rows.slice(0, limit);
  const last = items.at(-1);
  return { items, nextCursor: rows.length > limit && last ? encodeSequenceCursor(last.id) : null };
}

/** Splits `limit + 1` fetched rows into a page and the cursor of the next one. */
export function page<T extends { createdAt: Date; id: string }>(rows: T[], limit: number): { items: T[]; nextCursor: string | null } {
  const items = rows.slice(0, limit);
  const last = items.at(-1);
  return { items, nextCursor: rows.length > limit && last ? encodeCursor(last) : null };
}

/** Which way a list runs over (created_at, id); a cursor continues in the same direction. */
export type PageDirection = 'asc' | 'desc';

type After<T> = { lt: T } | { gt: T };

function after<T>(value: T, direction: PageDirection): After<T> {
  return direction === 'desc' ? { lt: value } : { gt: value };
}

/** The `where` fragment selecting rows after a cursor in (created_at, id) order, newest first unless `asc`. */
export function afterCursor(
  cursor: Cursor | undefined,
  direction: PageDirection = 'desc',
): { OR?: ({ createdAt: After<Date> } | { createdAt: Date; id: After<string> })[] } {
  return cursor
    ? { OR: [{ createdAt: after(cursor.createdAt, direction) }, { createdAt: cursor.createdAt, id: after(cursor.id, direction) }] }
    : {};
}

/** The `orderBy` matching afterCursor: created_at, then id as the tie-breaker. */
export function pageOrder(direction: PageDirection): [{ createdAt: PageDirection }, { id: PageDirection }] {
  return [{ createdAt: direction }, { id: direction }];
}
