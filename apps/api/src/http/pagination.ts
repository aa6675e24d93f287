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

export function encodeCursor(cursor: Cursor): string {
  return Buffer.from(JSON.stringify({ c: cursor.createdAt.toISOString(), i: cursor.id })).toString('base64url');
}

/** Decodes a cursor from the query string, or throws 400 naming `cursor`. */
export function decodeCursor(value: string | undefined): Cursor | undefined {
  if (value === undefined) return undefined;
  try {
    const parsed = cursorSchema.parse(JSON.parse(Buffer.from(value, 'base64url').toString('utf8')));
    return { createdAt: new Date(parsed.c), id: parsed.i };
  } catch {
    throw new AppError('bad_request', 'Invalid query parameter', [{ path: 'cursor', message: 'not a cursor returned by this API' }]);
  }
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
