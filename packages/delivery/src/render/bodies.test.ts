import {
  CONTENT_TYPES,
  MAX_BODY_BYTES,
  packBodies,
  type RenderedEvent,
  type WebhookFormat,
} from '@gatehook/delivery/render/bodies';

const bytes = (s: string) => Buffer.byteLength(s, 'utf8');
const ev = (eventId: string, json = JSON.stringify({ id: eventId })): RenderedEvent => ({ eventId, json });

/** A JSON string value of exactly n UTF-8 bytes, built from 3-byte characters so bytes and length differ. */
function euros(n: number): string {
  if ((n - 2) % 3 !== 0) throw new Error('n - 2 must be a multiple of 3');
  return `"${'€'.repeat((n - 2) / 3)}"`;
}

function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

describe('packBodies', () => {
  it.each<WebhookFormat>(['single', 'array', 'ndjson'])('returns nothing for no events (%s)', (format) => {
    expect(packBodies(format, [], 10)).toEqual({ bodies: [], oversized: [] });
  });

  it('uses the maximum of 1 MB by default', () => {
    expect(MAX_BODY_BYTES).toBe(1_048_576);
    const exact = ev('a', `"${'x'.repeat(MAX_BODY_BYTES - 2)}"`);
    expect(packBodies('single', [exact], 1).bodies).toHaveLength(1);
    expect(packBodies('array', [exact], 1).oversized).toEqual(['a']);
    const huge = ev('b', `"${'x'.repeat(MAX_BODY_BYTES - 1)}"`);
    expect(packBodies('single', [huge], 1)).toEqual({ bodies: [], oversized: ['b'] });
  });

  describe('single', () => {
    it('sends one body per event, in input order, ignoring maxEvents', () => {
      const events = [ev('c'), ev('a'), ev('b')];
      const { bodies, oversized } = packBodies('single', events, 100);
      expect(oversized).toEqual([]);
      expect(bodies).toEqual([
        { eventIds: ['c'], body: events[0]!.json, contentType: 'application/json' },
        { eventIds: ['a'], body: events[1]!.json, contentType: 'application/json' },
        { eventIds: ['b'], body: events[2]!.json, contentType: 'application/json' },
      ]);
    });

    it('sends the rendered JSON untouched, line breaks included', () => {
      const json = '{\n  "text": "hello"\n}\n';
      expect(packBodies('single', [ev('a', json)], 1).bodies[0]!.body).toBe(json);
    });

    it('fits an event of exactly maxBytes and isolates one a byte over', () => {
      const { bodies, oversized } = packBodies(
        'single',
        [ev('a', euros(20)), ev('b', euros(23)), ev('c', euros(20))],
        1,
        20,
      );
      expect(bodies.map((b) => b.eventIds)).toEqual([['a'], ['c']]);
      expect(oversized).toEqual(['b']);
    });
  });

  describe('array', () => {
    it('orders events by event id with a plain string comparison', () => {
      const ids = [
        'f47ac10b-58cc-4372-a567-0e02b2c3d479',
        '0b9f6c1e-2d7a-4c55-9a34-3f1c2b7e8d90',
        '9a7b3c1d-0000-4000-8000-000000000000',
        '0b9f6c1e-2d7a-4c55-9a34-3f1c2b7e8d8f',
      ];
      const { bodies } = packBodies(
        'array',
        ids.map((id) => ev(id)),
        100,
      );
      expect(bodies).toHaveLength(1);
      expect(bodies[0]!.eventIds).toEqual([...ids].sort());
      expect(JSON.parse(bodies[0]!.body)).toEqual([...ids].sort().map((id) => ({ id })));
    });

    it('compares by UTF-16 code units, not locale (upper case before lower case)', () => {
      const { bodies } = packBodies('array', [ev('b'), ev('B'), ev('a'), ev('A')], 10);
      expect(bodies[0]!.eventIds).toEqual(['A', 'B', 'a', 'b']);
    });

    it('writes [a,b,c] with no spaces added, as application/json', () => {
      const { bodies } = packBodies('array', [ev('2', '{"n":2}'), ev('1', '{"n":1}'), ev('3', '[3]')], 10);
      expect(bodies).toEqual([
        { eventIds: ['1', '2', '3'], body: '[{"n":1},{"n":2},[3]]', contentType: 'application/json' },
      ]);
    });

    it('keeps the rendered JSON of each event as it is, line breaks included', () => {
      const { bodies } = packBodies('array', [ev('a', '{\n"x": 1\n}')], 10);
      expect(bodies[0]!.body).toBe('[{\n"x": 1\n}]');
      expect(JSON.parse(bodies[0]!.body)).toEqual([{ x: 1 }]);
    });

    it('chunks by maxEvents in id order', () => {
      const events = ['e', 'c', 'a', 'd', 'b'].map((id) => ev(id));
      expect(packBodies('array', events, 2).bodies.map((b) => b.eventIds)).toEqual([['a', 'b'], ['c', 'd'], ['e']]);
      expect(packBodies('array', events, 1).bodies.map((b) => b.eventIds)).toEqual([['a'], ['b'], ['c'], ['d'], ['e']]);
      expect(packBodies('array', events, 5).bodies.map((b) => b.eventIds)).toEqual([['a', 'b', 'c', 'd', 'e']]);
    });

    it('splits at the byte boundary exactly, counting multi-byte characters as bytes', () => {
      // Each event is 8 bytes but 4 UTF-16 units; three of them make [x,x,x] = 2 + 24 + 2 = 28 bytes.
      const events = ['a', 'b', 'c'].map((id) => ev(id, euros(8)));
      const fits = packBodies('array', events, 10, 28).bodies;
      expect(fits.map((b) => b.eventIds)).toEqual([['a', 'b', 'c']]);
      expect(bytes(fits[0]!.body)).toBe(28);
      expect(fits[0]!.body.length).toBe(16);

      const split = packBodies('array', events, 10, 27).bodies;
      expect(split.map((b) => b.eventIds)).toEqual([['a', 'b'], ['c']]);
      expect(split.map((b) => bytes(b.body))).toEqual([19, 10]);
    });

    it('fits a one-event body of exactly maxBytes, brackets included', () => {
      expect(packBodies('array', [ev('a', euros(8))], 10, 10)).toEqual({
        bodies: [{ eventIds: ['a'], body: `[${euros(8)}]`, contentType: 'application/json' }],
        oversized: [],
      });
      expect(packBodies('array', [ev('a', euros(8))], 10, 9)).toEqual({ bodies: [], oversized: ['a'] });
    });

    it('isolates an oversized event without disturbing its neighbours', () => {
      const events = [ev('a', euros(8)), ev('b', euros(62)), ev('c', euros(8)), ev('d', euros(8))];
      const { bodies, oversized } = packBodies('array', events, 10, 30);
      expect(oversized).toEqual(['b']);
      expect(bodies.map((b) => b.eventIds)).toEqual([['a', 'c', 'd']]);
      expect(JSON.parse(bodies[0]!.body)).toEqual([JSON.parse(euros(8)), JSON.parse(euros(8)), JSON.parse(euros(8))]);
    });

    it('reports every event oversized when none fits', () => {
      expect(packBodies('array', [ev('b', euros(62)), ev('a', euros(62))], 10, 30)).toEqual({
        bodies: [],
        oversized: ['a', 'b'],
      });
    });

    it('does not reorder the caller’s array', () => {
      const events = [ev('b'), ev('a')];
      packBodies('array', events, 10);
      expect(events.map((e) => e.eventId)).toEqual(['b', 'a']);
    });
  });

  describe('ndjson', () => {
    it('writes one event per line, id order, with a trailing newline, as application/x-ndjson', () => {
      const { bodies } = packBodies('ndjson', [ev('2', '{"n":2}'), ev('1', '{"n":1}')], 10);
      expect(bodies).toEqual([
        { eventIds: ['1', '2'], body: '{"n":1}\n{"n":2}\n', contentType: 'application/x-ndjson' },
      ]);
    });

    it('keeps each event on its own line when its rendered JSON spans several', () => {
      const json = '{\r\n  "text": "a\\nb",\n  "n": [1,\n 2]\n}\n';
      const { bodies } = packBodies('ndjson', [ev('a', json), ev('b', '{"n":3}')], 10);
      const lines = bodies[0]!.body.split('\n');
      expect(lines).toHaveLength(3);
      expect(lines[2]).toBe('');
      expect(JSON.parse(lines[0]!)).toEqual(JSON.parse(json));
      expect(JSON.parse(lines[1]!)).toEqual({ n: 3 });
    });

    it('chunks by maxEvents', () => {
      const events = ['c', 'a', 'b'].map((id) => ev(id));
      expect(packBodies('ndjson', events, 2).bodies.map((b) => b.eventIds)).toEqual([['a', 'b'], ['c']]);
    });

    it('splits at the byte boundary exactly', () => {
      // Each line is 8 + 1 bytes, so three lines are 27 bytes.
      const events = ['a', 'b', 'c'].map((id) => ev(id, euros(8)));
      expect(packBodies('ndjson', events, 10, 27).bodies.map((b) => b.eventIds)).toEqual([['a', 'b', 'c']]);
      const split = packBodies('ndjson', events, 10, 26).bodies;
      expect(split.map((b) => b.eventIds)).toEqual([['a', 'b'], ['c']]);
      expect(split.map((b) => bytes(b.body))).toEqual([18, 9]);
    });

    it('measures an event after its line breaks are removed', () => {
      // 10 bytes as rendered, 8 on its line, 9 with the newline.
      const json = `\n${euros(8)}\n`;
      expect(packBodies('ndjson', [ev('a', json)], 1, 9).bodies).toEqual([
        { eventIds: ['a'], body: `${euros(8)}\n`, contentType: 'application/x-ndjson' },
      ]);
      expect(packBodies('ndjson', [ev('a', json)], 1, 8)).toEqual({ bodies: [], oversized: ['a'] });
    });
  });

  it.each([0, -1, 1.5, Number.NaN])('rejects maxEvents %p for batched formats', (maxEvents) => {
    expect(() => packBodies('array', [ev('a')], maxEvents)).toThrow(RangeError);
    expect(() => packBodies('ndjson', [ev('a')], maxEvents)).toThrow(RangeError);
  });

  it.each([0, -1, 1.5, Number.POSITIVE_INFINITY])('rejects maxBytes %p', (maxBytes) => {
    expect(() => packBodies('single', [ev('a')], 1, maxBytes)).toThrow(RangeError);
  });

  it('exposes the content-type of each format', () => {
    expect(CONTENT_TYPES).toEqual({
      single: 'application/json',
      array: 'application/json',
      ndjson: 'application/x-ndjson',
    });
  });

  it.each<WebhookFormat>(['array', 'ndjson'])('keeps every invariant for random batches (%s, seeded)', (format) => {
    const random = seeded(format === 'array' ? 1 : 2);
    const alphabet = ['a', 'é', '€', '😀', '"', '\\'];
    const problems: string[] = [];
    for (let run = 0; run < 300; run++) {
      const count = Math.floor(random() * 40);
      const events: RenderedEvent[] = Array.from({ length: count }, (_, i) => {
        const length = Math.floor(random() * 30);
        const text = Array.from({ length }, () => alphabet[Math.floor(random() * alphabet.length)]).join('');
        return { eventId: `${Math.floor(random() * 1e6)}`.padStart(6, '0') + `-${i}`, json: JSON.stringify({ text }) };
      });
      const maxEvents = 1 + Math.floor(random() * 10);
      const maxBytes = 20 + Math.floor(random() * 300);
      const { bodies, oversized } = packBodies(format, events, maxEvents, maxBytes);
      const bodyOf = (pieces: RenderedEvent[]) =>
        format === 'array' ? `[${pieces.map((p) => p.json).join(',')}]` : pieces.map((p) => `${p.json}\n`).join('');
      const byId = new Map(events.map((e) => [e.eventId, e]));

      const packed = bodies.flatMap((b) => b.eventIds);
      const all = [...packed, ...oversized].sort();
      if (JSON.stringify(all) !== JSON.stringify(events.map((e) => e.eventId).sort()))
        problems.push(`run ${run}: events lost or repeated`);
      if (JSON.stringify(packed) !== JSON.stringify([...packed].sort())) problems.push(`run ${run}: order not kept`);
      for (const id of oversized) {
        if (bytes(bodyOf([byId.get(id)!])) <= maxBytes) problems.push(`run ${run}: ${id} wrongly oversized`);
      }
      bodies.forEach((b, i) => {
        const pieces = b.eventIds.map((id) => byId.get(id)!);
        if (b.body !== bodyOf(pieces)) problems.push(`run ${run}: body ${i} malformed`);
        if (bytes(b.body) > maxBytes) problems.push(`run ${run}: body ${i} over maxBytes`);
        if (b.eventIds.length > maxEvents) problems.push(`run ${run}: body ${i} over maxEvents`);
        const next = bodies[i + 1];
        // Greedy: a body was closed only because the next event would not fit.
        if (
          next &&
          b.eventIds.length < maxEvents &&
          bytes(bodyOf([...pieces, byId.get(next.eventIds[0]!)!])) <= maxBytes
        ) {
          problems.push(`run ${run}: body ${i} closed early`);
        }
      });
    }
    expect(problems).toEqual([]);
  });
});
