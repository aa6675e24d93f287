import type { WEBHOOK_FORMATS } from '@gatehook/core/webhook-schema';

/** Largest request body, in UTF-8 bytes (SPEC 6.5, CONTRACT 5: 1 MB). */
export const MAX_BODY_BYTES = 1_048_576;

/** A webhook's body format (SPEC 6.4). */
export type WebhookFormat = (typeof WEBHOOK_FORMATS)[number];

/** The content-type header of each format (SPEC 6.4). */
export const CONTENT_TYPES: Readonly<Record<WebhookFormat, string>> = {
  single: 'application/json',
  array: 'application/json',
  ndjson: 'application/x-ndjson',
};

/** One event already rendered to a single JSON value: its envelope, or its template's output. */
export interface RenderedEvent {
  eventId: string;
  json: string;
}

/** One request body and the events it carries. */
export interface PackedBody {
  eventIds: string[];
  body: string;
  contentType: string;
}

interface Piece {
  eventId: string;
  text: string;
}

function byEventId(a: RenderedEvent, b: RenderedEvent): number {
  if (a.eventId < b.eventId) return -1;
  return a.eventId > b.eventId ? 1 : 0;
}

// A template may render its JSON over several lines, which would split one event across NDJSON lines. In valid
// JSON a raw CR or LF can only be insignificant whitespace between tokens (inside strings they must be escaped),
// and removing it never joins two tokens that need a separator, so the value stays the same.
// An envelope (JSON.stringify's output) never holds one: the plain search answers first, the regular expression
// runs only on a template's output that does.
function oneLine(json: string): string {
  return json.includes('\n') || json.includes('\r') ? json.replace(/[\r\n]+/g, '') : json;
}

/**
 * Packs rendered events into request bodies of at most maxBytes UTF-8 bytes (SPEC 6.4, 6.5; CONTRACT 5).
 *
 * - single: one body per event, in input order; maxEvents does not apply.
 * - array: events sorted by event id (plain string comparison), bodies `[a,b,c]` of at most maxEvents events.
 * - ndjson: the same order and chunking, one event per line, every line ending in `\n`; line breaks inside
 *   an event's JSON are removed so that each event stays on one line.
 *
 * Packing is greedy and keeps the order: a body is closed when it holds maxEvents events or when the next event
 * would push it past maxBytes. An event whose one-event body alone is over maxBytes is listed in `oversized` and
 * put in no body, without disturbing the bodies around it. Throws RangeError for a maxEvents or maxBytes that is
 * not a positive integer.
 */
export function packBodies(
  format: WebhookFormat,
  events: readonly RenderedEvent[],
  maxEvents: number,
  maxBytes: number = MAX_BODY_BYTES,
): { bodies: PackedBody[]; oversized: string[] } {
  if (!Number.isSafeInteger(maxBytes) || maxBytes < 1)
    throw new RangeError(`maxBytes must be a positive integer, got ${maxBytes}`);
  const contentType = CONTENT_TYPES[format];
  const bodies: PackedBody[] = [];
  const oversized: string[] = [];

  if (format === 'single') {
    for (const event of events) {
      if (Buffer.byteLength(event.json, 'utf8') > maxBytes) oversized.push(event.eventId);
      else bodies.push({ eventIds: [event.eventId], body: event.json, contentType });
    }
    return { bodies, oversized };
  }

  if (!Number.isSafeInteger(maxEvents) || maxEvents < 1)
    throw new RangeError(`maxEvents must be a positive integer, got ${maxEvents}`);
  // array: '[' + ']' around one event; ndjson: its trailing '\n'. Each further event adds one byte either way
  // (a ',' or its own '\n').
  const framing = format === 'array' ? 2 : 1;
  const finish = (pieces: Piece[]): PackedBody => ({
    eventIds: pieces.map((p) => p.eventId),
    body: format === 'array' ? `[${pieces.map((p) => p.text).join(',')}]` : pieces.map((p) => `${p.text}\n`).join(''),
    contentType,
  });

  let current: Piece[] = [];
  let currentBytes = 0;
  for (const event of [...events].sort(byEventId)) {
    const text = format === 'ndjson' ? oneLine(event.json) : event.json;
    const bytes = Buffer.byteLength(text, 'utf8');
    if (bytes + framing > maxBytes) {
      oversized.push(event.eventId);
      continue;
    }
    if (current.length > 0 && (current.length >= maxEvents || currentBytes + bytes + 1 > maxBytes)) {
      bodies.push(finish(current));
      current = [];
    }
    currentBytes = current.length === 0 ? bytes + framing : currentBytes + bytes + 1;
    current.push({ eventId: event.eventId, text });
  }
  if (current.length > 0) bodies.push(finish(current));
  return { bodies, oversized };
}
