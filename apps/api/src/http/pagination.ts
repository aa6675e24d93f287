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
    throw new AppError('bad_request', 'Invalid query parameter', [
      { path: 'cursor', message: 'not a cursor returned by this API' },
    ]);
  }
}

function encodeCursor(cursor: Cursor): string {
  return encode({ c: cursor.createdAt.toISOString(), i: cursor.id });
}

/** Decodes a cursor from the query string, or throws 400 naming `cursor`. */
function decodeCursor(value: string | undefined): Cursor | undefined {
  if (value === undefined) return undefined;
  const parsed = decode(value, cursorSchema);
  return { createdAt: new Date(parsed.c), id: parsed.i };
}

// Rows keyed by an increasing sequence number (delivery attempts) page by that number alone.
const sequenceCursorSchema = z.object({ s: z.string().regex(/^\d{1,19}$/) });

/** Which way a list runs over (created_at, id); a cursor continues in the same direction. */
export type PageDirection = 'asc' | 'desc';

type After<T> = { lt: T } | { gt: T };

function after<T>(value: T, direction: PageDirection): After<T> {
  return direction === 'desc' ? { lt: value } : { gt: value };
}

/** The `where` fragment selecting rows after a cursor in (created_at, id) order. */
type AfterCursor = { OR?: ({ createdAt: After<Date> } | { createdAt: Date; id: After<string> })[] };

/**
 * How a list is ordered and continued: the `where` fragment of the rows after a cursor from the query string
 * (400 naming `cursor` when it is not one this API returned), the matching `orderBy`, and the cursor after a row.
 */
export interface Keyset<Row, Where, Order> {
  after(cursor: string | undefined): Where;
  orderBy: Order;
  cursorOf(row: Row): string;
}

/** Lists ordered by (created_at, id), newest first unless `asc`; id is the tie-breaker. */
export function byCreatedAt(
  direction: PageDirection = 'desc',
): Keyset<Cursor, AfterCursor, [{ createdAt: PageDirection }, { id: PageDirection }]> {
  return {
    after(value) {
      const cursor = decodeCursor(value);
      return cursor
        ? {
            OR: [
              { createdAt: after(cursor.createdAt, direction) },
              { createdAt: cursor.createdAt, id: after(cursor.id, direction) },
            ],
          }
        : {};
    },
    orderBy: [{ createdAt: direction }, { id: direction }],
    cursorOf: encodeCursor,
  };
}

/** Lists ordered by a bigint key (delivery attempts), newest first. */
export const bySequence: Keyset<{ id: bigint }, { id?: { lt: bigint } }, { id: 'desc' }> = {
  after(value) {
    if (value === undefined) return {};
    return { id: { lt: BigInt(decode(value, sequenceCursorSchema).s) } };
  },
  orderBy: { id: 'desc' },
  cursorOf: (row) => encode({ s: row.id.toString() }),
};

/**
 * One page of a list: fetches `limit + 1` rows after the query's cursor in the keyset's order, and returns the
 * first `limit` as views with the cursor of the next page (null on the last).
 */
export async function listPage<Row extends Key, Key, Where, Order, View>(
  query: { limit: number; cursor?: string | undefined },
  keyset: Keyset<Key, Where, Order>,
  fetch: (page: { where: Where; orderBy: Order; take: number }) => Promise<Row[]>,
  view: (items: Row[]) => View[] | Promise<View[]>,
): Promise<{ items: View[]; next_cursor: string | null }> {
  const rows = await fetch({ where: keyset.after(query.cursor), orderBy: keyset.orderBy, take: query.limit + 1 });
  const items = rows.slice(0, query.limit);
  const last = items.at(-1);
  return { items: await view(items), next_cursor: rows.length > query.limit && last ? keyset.cursorOf(last) : null };
}
