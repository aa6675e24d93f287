import { randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import { TEST_DATABASE_URL } from '@gatehook/testkit/env';
import type { AuditEventData } from '@gatehook/core/audit-event';
import { createDb, sqlPool } from './client';
import { insertAuditEvents, readEvents, readPendingEvents, type OutboxEvent } from './outbox';

const db = createDb(TEST_DATABASE_URL, { poolSize: 2 });
const pool = sqlPool(db);
afterAll(() => db.$disconnect());

function event(orgId: string, overrides: Partial<AuditEventData> = {}): OutboxEvent {
  const receivedAt = new Date('2026-11-25T12:00:00.123Z');
  return {
    receivedAt,
    data: {
      id: randomUUID(),
      org_id: orgId,
      action: 'tool.called',
      actor_type: 'user',
      actor_id: 'u1',
      actor_display_name: '',
      resource_type: 'tool',
      resource_id: 't1',
      resource_display_name: 'T',
      resources: {},
      context: {},
      changes: [],
      payload: {},
      created_at: '2026-11-25T11:59:59.999Z',
      ...overrides,
    },
  };
}

describe('insertAuditEvents', () => {
  it('stores every field as given, whatever its characters, and reads it back the same', async () => {
    const orgId = randomUUID();
    const tricky = event(orgId, {
      action: 'a"b\\c\n\u2028',
      actor_display_name: 'Zoë 🚀 "quoted" \\ back\\slash {braces} ,comma',
      resources: { 'dotted.key': 'x', '': 'empty key' },
      context: { ip: '203.0.113.1', nested: { list: [1, -2.5, 1e21, 0.1, true, null, 'é'] }, tab: '\t' },
      changes: [{ field: 'name', from: null, to: '{"not":"parsed"}' }],
      payload: { big: 12345678901234567890, unicode: '\u00e9\u4e2d\ud83d\ude00', escaped: '\\u0041' },
    });
    const plain = event(orgId);
    const inserted = await insertAuditEvents(pool, [tricky, plain]);
    expect(inserted).toEqual([
      { orgId, id: tricky.data.id },
      { orgId, id: plain.data.id },
    ]);

    const back = await readEvents(pool, orgId, [
      { id: tricky.data.id, receivedAt: tricky.receivedAt },
      { id: plain.data.id, receivedAt: null },
    ]);
    const byId = new Map(back.map((e) => [e.data.id, e]));
    for (const original of [tricky, plain]) {
      // jsonb does not keep key order; compare as values.
      expect(byId.get(original.data.id)?.data).toEqual(original.data);
      expect(byId.get(original.data.id)?.receivedAt.toISOString()).toBe(original.receivedAt.toISOString());
    }
    expect((await readPendingEvents(pool, orgId, [tricky.data.id])).map((e) => e.data.id)).toEqual([tricky.data.id]);
  });

  it('gives created_at back as Date.toISOString() writes it, from year 1 to 9999, and received_at to the millisecond', async () => {
    const orgId = randomUUID();
    const stamps = [
      '0001-01-01T00:00:00.000Z',
      '1969-12-31T23:59:59.001Z',
      '2026-02-28T23:59:59.999Z',
      '9999-12-31T23:59:59.999Z',
    ];
    const events = stamps.map((created_at, i) => ({
      ...event(orgId, { created_at }),
      receivedAt: new Date(Date.UTC(2026, 10, 25, 12, 0, 0, i * 7 + 1)),
    }));
    await insertAuditEvents(pool, events);
    const back = new Map(
      (
        await readPendingEvents(
          pool,
          orgId,
          events.map((e) => e.data.id),
        )
      ).map((e) => [e.data.id, e]),
    );
    for (const original of events) {
      expect(back.get(original.data.id)?.data.created_at).toBe(original.data.created_at);
      expect(back.get(original.data.id)?.receivedAt.getTime()).toBe(original.receivedAt.getTime());
    }
  });

  it('skips ids already stored and returns only the rows it inserted', async () => {
    const orgId = randomUUID();
    const first = event(orgId);
    await insertAuditEvents(pool, [first]);
    const second = event(orgId);
    const again = await insertAuditEvents(pool, [{ ...first, data: { ...first.data, action: 'changed' } }, second]);
    expect(again).toEqual([{ orgId, id: second.data.id }]);
    const [stored] = await readEvents(pool, orgId, [{ id: first.data.id, receivedAt: null }]);
    expect(stored?.data.action).toBe('tool.called');
  });
});

describe('readEvents', () => {
  it('reads an event by its received_at, which must be its own, or without one from whichever partition holds it', async () => {
    const orgId = randomUUID();
    const [a, b, c] = [event(orgId), event(orgId), event(orgId)];
    await insertAuditEvents(pool, [a, b, c]);
    const elsewhen = new Date(a.receivedAt.getTime() + 86_400_000);

    const read = await readEvents(pool, orgId, [
      { id: a.data.id, receivedAt: a.receivedAt },
      { id: b.data.id, receivedAt: null },
      // The lookup is by the partition key: another instant finds nothing, even for a stored id.
      { id: c.data.id, receivedAt: elsewhen },
    ]);
    expect(read.map((e) => e.data.id)).toEqual([a.data.id, b.data.id].sort());
    expect(read.map((e) => e.receivedAt.toISOString())).toEqual([
      a.receivedAt.toISOString(),
      b.receivedAt.toISOString(),
    ]);
    expect(await readEvents(pool, randomUUID(), [{ id: a.data.id, receivedAt: a.receivedAt }])).toEqual([]);
    expect(await readEvents(pool, orgId, [])).toEqual([]);
  });
});

describe('the id lookups of ingestion and fan-out', () => {
  it('run from one generic plan per session from their first call, however few ids a call carries', async () => {
    // auto_explain sends this session the plan of every statement it runs, those inside functions too.
    const explained = new Pool({
      connectionString: TEST_DATABASE_URL,
      max: 1,
      options:
        '-c session_preload_libraries=auto_explain -c auto_explain.log_min_duration=0 -c auto_explain.log_verbose=on ' +
        '-c auto_explain.log_nested_statements=on -c client_min_messages=log',
    });
    const plans: string[] = [];
    explained.on('connect', (client) => client.on('notice', (n) => plans.push(n.message ?? '')));
    const ids: string[] = [];
    try {
      const orgId = randomUUID();
      // More calls than the five after which Postgres's default mode would first weigh a generic plan.
      for (let i = 0; i < 7; i++) {
        const e = event(orgId);
        ids.push(e.data.id);
        expect(await insertAuditEvents(explained, [e])).toEqual([{ orgId, id: e.data.id }]);
        expect((await readPendingEvents(explained, orgId, [e.data.id])).map((r) => r.data.id)).toEqual([e.data.id]);
      }
    } finally {
      await explained.end();
    }
    // A custom plan is made for the call's values and shows them; the generic plan shows the parameters.
    const probes = plans.filter((p) => p.includes('gatehook_chosen_id_since(k.id) AS since'));
    const reads = plans.filter((p) => p.includes('p.event_id = k.id LIMIT 1'));
    expect(probes).toHaveLength(7);
    expect(reads).toHaveLength(7);
    for (const plan of [...probes, ...reads]) {
      expect(plan).toMatch(/unnest\(\$\d/);
      for (const id of ids) expect(plan).not.toContain(id);
    }
  });
});
