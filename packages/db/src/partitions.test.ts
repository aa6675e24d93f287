import { randomBytes, randomUUID } from 'node:crypto';
import { Client, Pool } from 'pg';
import { commitFanout } from '@gatehook/db/delivery/create';
import { applyMigrations } from '@gatehook/db/migrate';
import { outboxEvent, uuidv7 } from '@gatehook/testkit/audit-events';
import { dropDatabase } from '@gatehook/testkit/database';
import { readBatchItems } from '@gatehook/db/delivery/batch-buffer';
import { insertAuditEvents, READ_EVENTS, readEvents, readPendingEvents, type OutboxEvent } from '@gatehook/db/outbox';
import {
  analyzeGrownPartitions,
  autovacuumState,
  dropExpiredPartitions,
  ensurePartitions,
  listPartitions,
  partitionName,
  PARTITION_LOCK_RETRY,
  periodEnd,
  periodStart,
  sweepDefaultPartitions,
  uuidV7Floor,
  uuidV7Time,
} from '@gatehook/db/partitions';

const SERVER = process.env.TEST_PG_SERVER ?? 'postgresql://postgres@127.0.0.1:5432';
const dbName = `gatehook_partitions_${randomBytes(4).toString('hex')}`;
const databaseUrl = `${SERVER}/${dbName}`;
const DAY = 86_400_000;

let pool: Pool;

afterAll(async () => {
  await pool?.end();
  await dropDatabase(databaseUrl);
});

describe('partition arithmetic', () => {
  it('finds the UTC period of each width', () => {
    const t = Date.parse('2026-11-26T13:45:10.123Z'); // a Thursday
    expect(new Date(periodStart(t, 'hour')).toISOString()).toBe('2026-11-26T13:00:00.000Z');
    expect(new Date(periodStart(t, 'day')).toISOString()).toBe('2026-11-26T00:00:00.000Z');
    expect(new Date(periodStart(t, 'week')).toISOString()).toBe('2026-11-23T00:00:00.000Z');
    expect(new Date(periodEnd(t, 'week')).toISOString()).toBe('2026-11-30T00:00:00.000Z');
    expect(new Date(periodStart(t, 'month')).toISOString()).toBe('2026-11-01T00:00:00.000Z');
    expect(new Date(periodEnd(Date.parse('2026-12-31T23:00:00Z'), 'month')).toISOString()).toBe(
      '2027-01-01T00:00:00.000Z',
    );
    expect(partitionName('deliveries', periodStart(t, 'day'))).toBe('deliveries_p20261126');
    expect(partitionName('deliveries', periodStart(t, 'hour'))).toBe('deliveries_p2026112613');
  });

  it('bounds UUIDv7 ids by their time', () => {
    const ms = Date.now();
    const id = uuidv7({ msecs: ms });
    expect(uuidV7Time(id)).toBe(ms);
    expect(uuidV7Floor(ms) <= id && id < uuidV7Floor(ms + 1)).toBe(true);
    expect(uuidV7Time(uuidV7Floor(ms))).toBe(ms);
  });
});

const org = randomUUID();
const webhook = randomUUID();
const event = (id: string, receivedAt: Date, action = 'tag.created'): OutboxEvent =>
  outboxEvent(org, id, receivedAt, action);

beforeAll(async () => {
  await applyMigrations(databaseUrl);
  pool = new Pool({ connectionString: databaseUrl, max: 4 });
  await pool.query(`INSERT INTO organizations (id, name) VALUES ($1, 'o')`, [org]);
  await pool.query(
    `INSERT INTO webhooks (id, org_id, name, url_encrypted, url_mask, events, secret_encrypted, active_since, updated_at, format, max_events)
     VALUES ($1, $2, 'w', 'x', 'https://h/…abcd', '{tag.created}', 's', now(), now(), 'array', 10)`,
    [webhook, org],
  );
  // Yesterday's partitions, as a worker that ran yesterday left them: events of yesterday have a partition of their own.
  await ensurePartitions(pool, new Date(Date.now() - DAY), { width: 'day', aheadMs: DAY });
});

describe('lookups by delivery id', () => {
  const plan = async (sql: string, params: unknown[] = []) => {
    const client = await pool.connect();
    try {
      // A generic plan prunes at executor start-up (the hot path's named statements run so after five executions).
      await client.query(`SET plan_cache_mode = force_generic_plan`);
      await client
        .query({ name: `p${randomBytes(4).toString('hex')}`, text: sql, values: params })
        .catch(() => undefined);
      const { rows } = await client.query<{ 'QUERY PLAN': string }>(
        `EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ${sql}`.replace(/\$1/g, `'${String(params[0])}'`),
      );
      return rows.map((r) => r['QUERY PLAN']).join('\n');
    } finally {
      await client.query('RESET plan_cache_mode');
      client.release();
    }
  };

  it('touch one partition (and the DEFAULT partition only for ids no partition covers)', async () => {
    const id = uuidv7();
    const today = partitionName('deliveries', periodStart(Date.now(), 'day'));
    const byId = await plan(`SELECT * FROM deliveries WHERE id = $1`, [id]);
    expect(byId).toContain(`on ${today}`);
    expect(byId.match(/deliveries_p\d+|deliveries_default/g)!.filter((n, i, all) => all.indexOf(n) === i)).toEqual([
      today,
    ]);
    const attempts = await plan(`SELECT * FROM delivery_attempts WHERE delivery_id = $1 ORDER BY id DESC LIMIT 6`, [
      id,
    ]);
    expect(
      attempts.match(/delivery_attempts_p\d+|delivery_attempts_default/g)!.filter((n, i, all) => all.indexOf(n) === i),
    ).toEqual([`delivery_attempts_p${today.slice(-8)}`]);
  });

  it('prune a list of ids in the hot path statements, whose plans stay custom', async () => {
    const client = await pool.connect();
    try {
      // The text of leaseDeliveries and of recordAttempts' update, as named statements run them: after five
      // executions the plan cache weighs a generic plan, which cannot prune `= ANY($1)`, and keeps custom ones.
      await client.query(`PREPARE lease_plan(uuid[], timestamptz, timestamptz) AS UPDATE deliveries SET leased_until = $3
        WHERE id = ANY($1::uuid[]) AND status IN ('pending', 'retrying') AND next_retry_at <= $2 AND (leased_until IS NULL OR leased_until < $2)`);
      await client.query(`PREPARE record_plan(uuid[], timestamptz[]) AS UPDATE deliveries d SET attempt_count = d.attempt_count + 1
        FROM unnest($1::uuid[], $2::timestamptz[]) AS r(delivery_id, lease)
        WHERE d.id = r.delivery_id AND d.id = ANY($1::uuid[]) AND d.leased_until = r.lease`);
      const id = uuidv7();
      for (let i = 0; i < 8; i++) {
        await client.query(`EXECUTE lease_plan(ARRAY['${uuidv7()}']::uuid[], now(), now())`);
        await client.query(`EXECUTE record_plan(ARRAY['${uuidv7()}']::uuid[], ARRAY[now()]::timestamptz[])`);
      }
      const today = partitionName('deliveries', periodStart(Date.now(), 'day'));
      for (const statement of [
        `lease_plan(ARRAY['${id}']::uuid[], now(), now())`,
        `record_plan(ARRAY['${id}']::uuid[], ARRAY[now()]::timestamptz[])`,
      ]) {
        const { rows } = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN (COSTS OFF) EXECUTE ${statement}`);
        const text = rows.map((r) => r['QUERY PLAN']).join('\n');
        expect(text.match(/deliveries_p\d+|deliveries_default/g)!.filter((n, i, all) => all.indexOf(n) === i)).toEqual([
          today,
        ]);
      }
      await client.query('DEALLOCATE lease_plan; DEALLOCATE record_plan');
    } finally {
      client.release();
    }
  });
});

describe('statistics of young audit_events partitions', () => {
  // Step 2 of insert_audit_events() (migration 20261129000000_chosen_v7_id_probe), its variables as parameters.
  const PROBE = `SELECT array_agg(c.org_id), array_agg(c.id)
    FROM (SELECT k.org_id, k.id, gatehook_chosen_id_since(k.id) AS since
          FROM unnest($1::uuid[], $2::uuid[]) AS k(org_id, id) OFFSET 0) AS c
    CROSS JOIN LATERAL (
      SELECT 1 FROM audit_events e WHERE e.org_id = c.org_id AND e.id = c.id AND e.received_at >= c.since LIMIT 1
    ) AS hit`;
  const today = partitionName('audit_events', periodStart(Date.now(), 'day'));
  // An organisation of its own: the rows stay out of the other tests' way.
  const statsOrg = randomUUID();

  /** The partition's pages now, and what the planner was last told (reltuples -1: never analysed). */
  const sizeOf = async (name: string) => {
    const { rows } = await pool.query<{ pages: string; relpages: number; reltuples: number }>(
      `SELECT pg_relation_size(oid) / current_setting('block_size')::int AS pages, relpages, reltuples
       FROM pg_class WHERE relname = $1`,
      [name],
    );
    return { pages: Number(rows[0]!.pages), relpages: rows[0]!.relpages, reltuples: rows[0]!.reltuples };
  };

  /** Ingests 100-event batches into today's partition until it holds `pages` pages. */
  const growTo = async (pages: number) => {
    while ((await sizeOf(today)).pages < pages) {
      const at = new Date();
      await insertAuditEvents(
        pool,
        Array.from({ length: 100 }, () => outboxEvent(statsOrg, randomUUID(), at)),
      );
    }
  };

  afterAll(() => pool.query('DELETE FROM pending_fanout WHERE org_id = $1', [statsOrg]));

  it('are taken once a partition has rows, so that a plan kept from when it was empty probes it by its key', async () => {
    // Nothing has rows yet: nothing is analysed.
    expect(await analyzeGrownPartitions(pool)).toEqual([]);
    expect((await sizeOf(today)).pages).toBe(0);

    const client = await pool.connect();
    try {
      // A session's kept plan (as PL/pgSQL keeps one after five calls), made while today's partition is empty.
      await client.query('SET plan_cache_mode = force_generic_plan');
      await client.query(`PREPARE probe(uuid[], uuid[]) AS ${PROBE}`);
      const probeOfToday = async () => {
        const { rows } = await client.query<{ 'QUERY PLAN': string }>(
          `EXPLAIN (COSTS OFF) EXECUTE probe(ARRAY['${statsOrg}']::uuid[], ARRAY['${randomUUID()}']::uuid[])`,
        );
        return rows.map((r) => r['QUERY PLAN']).find((line) => line.includes(` on ${today} `)) ?? 'not probed';
      };
      await probeOfToday();

      await growTo(16);
      expect((await sizeOf(today)).reltuples).toBe(-1);
      expect(await analyzeGrownPartitions(pool)).toEqual([today]);
      const analysed = await sizeOf(today);
      expect(analysed.reltuples).toBeGreaterThan(0);
      expect(analysed.relpages).toBeGreaterThanOrEqual(16);

      // Analysing invalidated the kept plan; the next one probes today's partition by its primary key.
      expect(await probeOfToday()).toContain(`${today}_pkey`);
    } finally {
      await client.query('DEALLOCATE ALL; RESET plan_cache_mode');
      client.release();
    }

    // Again only once the partition has grown fourfold.
    expect(await analyzeGrownPartitions(pool)).toEqual([]);
    await growTo(4 * (await sizeOf(today)).relpages);
    expect(await analyzeGrownPartitions(pool)).toEqual([today]);
  });
});

describe('autovacuum', () => {
  it('is reported off for the server as Postgres says, and for each churned table that turns it off', async () => {
    const { rows } = await pool.query<{ autovacuum: string }>('SHOW autovacuum');
    expect((await autovacuumState(pool)).server).toBe(rows[0]!.autovacuum === 'on');
    expect((await autovacuumState(pool)).tablesWithout).toEqual([]);
    const today = partitionName('deliveries', periodStart(Date.now(), 'day'));
    await pool.query(`ALTER TABLE pending_fanout SET (autovacuum_enabled = false)`);
    await pool.query(`ALTER TABLE "${today}" SET (autovacuum_enabled = off)`);
    try {
      expect((await autovacuumState(pool)).tablesWithout).toEqual([today, 'pending_fanout']);
    } finally {
      await pool.query(`ALTER TABLE pending_fanout RESET (autovacuum_enabled)`);
      await pool.query(`ALTER TABLE "${today}" RESET (autovacuum_enabled)`);
    }
    expect((await autovacuumState(pool)).tablesWithout).toEqual([]);
  });
});

describe('reads of events by key', () => {
  it("read a batch's events by their received_at from their one partition, and without it from every partition", async () => {
    // Received three days ahead (a clock far off): its partition comes after others, which a lookup that did not
    // prune would probe first.
    const at = Date.now() + 3 * DAY;
    const id = randomUUID();
    await insertAuditEvents(pool, [event(id, new Date(at))]);
    const ownPartition = partitionName('audit_events', periodStart(at, 'day'));
    const client = await pool.connect();
    try {
      await client.query(`PREPARE read_events_plan(uuid, uuid[], timestamptz[], uuid[]) AS ${READ_EVENTS}`);
      // Partitions whose index was probed: a pruned subplan shows as never executed.
      const probed = async (args: string) => {
        const { rows } = await client.query<{ 'QUERY PLAN': string }>(
          `EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) EXECUTE read_events_plan(${args})`,
        );
        return [
          ...new Set(
            rows
              .map((r) => r['QUERY PLAN'])
              .filter((line) => !line.includes('never executed'))
              .flatMap((line) => line.match(/audit_events_(?:p\d+|default)/g) ?? []),
          ),
        ];
      };
      const timed = await probed(
        `'${org}', ARRAY['${id}']::uuid[], ARRAY['${new Date(at).toISOString()}']::timestamptz[], '{}'::uuid[]`,
      );
      expect(timed).toEqual([ownPartition]);
      // Without it, an id is looked for in partition after partition until found: one that is not there, in all.
      const untimed = await probed(`'${org}', '{}'::uuid[], '{}'::timestamptz[], ARRAY['${randomUUID()}']::uuid[]`);
      expect(untimed).toContain(ownPartition);
      expect(untimed).toContain('audit_events_default');
      expect(untimed.length).toBe((await listPartitions(pool, 'audit_events')).length + 1);
      await client.query('DEALLOCATE read_events_plan');
    } finally {
      client.release();
    }
    expect((await readEvents(pool, org, [{ id, receivedAt: new Date(at) }])).map((e) => e.data.id)).toEqual([id]);
  });
});

describe('idempotent ingestion across partitions', () => {
  it('stores an event id once when it comes again a day later, after its fan-out', async () => {
    const id = randomUUID(); // a client-supplied id need not be time-ordered
    const yesterday = new Date(Date.now() - DAY);
    expect(await insertAuditEvents(pool, [event(id, yesterday)])).toEqual([{ orgId: org, id }]);
    await commitFanout(pool, { orgId: org, eventIds: [id], now: new Date(), deliveries: [], batchItems: [] });
    expect(await insertAuditEvents(pool, [event(id, new Date())])).toEqual([]);
    const { rows } = await pool.query<{ part: string }>(
      `SELECT tableoid::regclass::text AS part FROM audit_events WHERE org_id = $1 AND id = $2`,
      [org, id],
    );
    expect(rows.map((r) => r.part)).toEqual([partitionName('audit_events', periodStart(yesterday.getTime(), 'day'))]);
    expect((await pool.query(`SELECT 1 FROM pending_fanout WHERE event_id = $1`, [id])).rowCount).toBe(0);
  });

  it('looks for a UUIDv7 id from its own instant less a day on, and for any other id in every partition', async () => {
    // Partitions of three and two days ago, each copy below received in one of them.
    await ensurePartitions(pool, new Date(Date.now() - 3 * DAY), { width: 'day', aheadMs: DAY });
    const threeDaysAgo = new Date(Date.now() - 3 * DAY);
    /** Stores the id at `first`, fans it out, and ingests it again now: the pairs the second ingestion stored. */
    const again = async (id: string, first: Date) => {
      expect(await insertAuditEvents(pool, [event(id, first)])).toEqual([{ orgId: org, id }]);
      await commitFanout(pool, { orgId: org, eventIds: [id], now: new Date(), deliveries: [], batchItems: [] });
      return insertAuditEvents(pool, [event(id, new Date())]);
    };
    // A random id, received three days ago.
    expect(await again(randomUUID(), threeDaysAgo)).toEqual([]);
    // A UUIDv7 made and received yesterday.
    const yesterday = Date.now() - DAY;
    expect(await again(uuidv7({ msecs: yesterday }), new Date(yesterday))).toEqual([]);
    // A UUIDv7 whose instant is more than a day ahead of the service's clock says nothing of when it was received.
    expect(await again(uuidv7({ msecs: Date.now() + 2 * DAY }), threeDaysAgo)).toEqual([]);
    // A UUIDv7 made now is not looked for three days back: a copy received then came from a client whose clock ran
    // more than a day ahead of the service's (docs/database.md), and this copy is stored too.
    const madeNow = uuidv7();
    expect(await again(madeNow, threeDaysAgo)).toEqual([{ orgId: org, id: madeNow }]);
  });

  it('stores it once when two ingestions race on either side of a partition boundary', async () => {
    const id = randomUUID();
    const midnight = periodStart(Date.now(), 'day');
    const [a, b] = [new Client({ connectionString: databaseUrl }), new Client({ connectionString: databaseUrl })];
    await a.connect();
    await b.connect();
    try {
      const json = (e: OutboxEvent) => JSON.stringify([{ ...e.data, received_at: e.receivedAt.toISOString() }]);
      await a.query('BEGIN');
      expect(
        (await a.query(`SELECT * FROM insert_audit_events($1::jsonb)`, [json(event(id, new Date(midnight - 1)))]))
          .rowCount,
      ).toBe(1);
      // b waits on a's claim in pending_fanout, then sees a's event and stores nothing.
      const second = b.query(`SELECT * FROM insert_audit_events($1::jsonb)`, [json(event(id, new Date(midnight + 1)))]);
      await new Promise((r) => setTimeout(r, 200));
      await a.query('COMMIT');
      expect((await second).rowCount).toBe(0);
    } finally {
      await a.end();
      await b.end();
    }
    expect((await pool.query(`SELECT 1 FROM audit_events WHERE org_id = $1 AND id = $2`, [org, id])).rowCount).toBe(1);
  });

  it('looks in the partitions only for the ids a client chose: an id the service generated is stored without a probe', async () => {
    const client = await pool.connect();
    // Index scans of the audit-event partitions this backend counted and has not reported yet: exact for a delta,
    // unlike the shared statistics, which other backends report when they will.
    const probes = async () => {
      const { rows } = await client.query<{ scans: string }>(
        `SELECT coalesce(sum(idx_scan), 0)::text AS scans FROM pg_stat_xact_user_tables WHERE relname LIKE 'audit\\_events\\_%'`,
      );
      return Number(rows[0]!.scans);
    };
    try {
      await client.query('BEGIN');
      const start = await probes();
      const generated = uuidv7();
      expect(await insertAuditEvents(client, [{ ...event(generated, new Date()), generatedId: true }])).toEqual([
        { orgId: org, id: generated },
      ]);
      expect(await probes()).toBe(start);
      const chosen = randomUUID();
      expect(
        await insertAuditEvents(client, [
          event(chosen, new Date()),
          { ...event(uuidv7(), new Date()), generatedId: true },
        ]),
      ).toHaveLength(2);
      expect(await probes()).toBeGreaterThan(start);
      await client.query('COMMIT');
    } finally {
      await client.query('ROLLBACK').catch(() => undefined);
      client.release();
    }
  });

  it('still stores a chosen id once when it comes again among generated ones', async () => {
    const id = randomUUID();
    expect(await insertAuditEvents(pool, [event(id, new Date(Date.now() - DAY))])).toEqual([{ orgId: org, id }]);
    await commitFanout(pool, { orgId: org, eventIds: [id], now: new Date(), deliveries: [], batchItems: [] });
    const fresh = uuidv7();
    expect(
      await insertAuditEvents(pool, [{ ...event(fresh, new Date()), generatedId: true }, event(id, new Date())]),
    ).toEqual([{ orgId: org, id: fresh }]);
    expect((await pool.query(`SELECT 1 FROM audit_events WHERE org_id = $1 AND id = $2`, [org, id])).rowCount).toBe(1);
    expect((await pool.query(`SELECT 1 FROM pending_fanout WHERE event_id = $1`, [id])).rowCount).toBe(0);
  });

  it('keeps the first of an id repeated within one batch', async () => {
    const id = randomUUID();
    const now = new Date();
    expect(await insertAuditEvents(pool, [event(id, now, 'tag.created'), event(id, now, 'tag.deleted')])).toEqual([
      { orgId: org, id },
    ]);
    expect(
      (await pool.query<{ action: string }>(`SELECT action FROM audit_events WHERE org_id = $1 AND id = $2`, [org, id]))
        .rows,
    ).toEqual([{ action: 'tag.created' }]);
  });
});

describe('partition upkeep and retention', () => {
  it('creates partitions ahead, moving rows that waited in the DEFAULT partition, and never overlaps on a change of width', async () => {
    const future = periodStart(Date.now() + 60 * DAY, 'day'); // past what the migration and the worker create
    const waiting = uuidv7({ msecs: future + 3_600_000 });
    await pool.query(
      `INSERT INTO deliveries (id, org_id, webhook_id, status, event_ids, event_count, created_at, updated_at) VALUES ($1, $2, $3, 'succeeded', '{}', 0, now(), now())`,
      [waiting, org, webhook],
    );
    await pool.query(
      `INSERT INTO delivery_attempts (delivery_id, webhook_id, at, status_code, duration_ms) VALUES ($1, $2, now(), 200, 1)`,
      [waiting, webhook],
    );
    expect(
      (
        await pool.query<{ part: string }>(`SELECT tableoid::regclass::text AS part FROM deliveries WHERE id = $1`, [
          waiting,
        ])
      ).rows[0]!.part,
    ).toBe('deliveries_default');

    const created = await ensurePartitions(pool, new Date(future), { width: 'day', aheadMs: 2 * DAY });
    expect(created).toContain(partitionName('deliveries', periodStart(future, 'day')));
    expect(
      (
        await pool.query<{ part: string }>(`SELECT tableoid::regclass::text AS part FROM deliveries WHERE id = $1`, [
          waiting,
        ])
      ).rows[0]!.part,
    ).toBe(partitionName('deliveries', periodStart(future, 'day')));
    expect(
      (
        await pool.query<{ part: string }>(
          `SELECT tableoid::regclass::text AS part FROM delivery_attempts WHERE delivery_id = $1`,
          [waiting],
        )
      ).rows[0]!.part,
    ).toBe(partitionName('delivery_attempts', periodStart(future, 'day')));
    expect(await ensurePartitions(pool, new Date(future), { width: 'day', aheadMs: 2 * DAY })).toEqual([]);

    // Weeks after days: the first week partition starts where the day partitions end.
    await ensurePartitions(pool, new Date(future), { width: 'week', aheadMs: 21 * DAY });
    for (const table of ['deliveries', 'delivery_attempts', 'audit_events']) {
      const parts = await listPartitions(pool, table);
      for (let i = 1; i < parts.length; i++) expect(parts[i]!.from).toBeGreaterThanOrEqual(parts[i - 1]!.to);
      expect(parts.at(-1)!.to).toBeGreaterThanOrEqual(future + 21 * DAY);
    }
  });

  it('drops whole partitions past the retention, keeping the events still owed to a webhook', async () => {
    const old = Date.now() - 40 * DAY;
    const oldDay = periodStart(old, 'day');
    await ensurePartitions(pool, new Date(old), { width: 'day', aheadMs: DAY });
    const [gone, owed, inBuffer, delivery] = [randomUUID(), randomUUID(), randomUUID(), uuidv7({ msecs: old })];
    await insertAuditEvents(pool, [
      event(gone, new Date(old)),
      event(owed, new Date(old)),
      event(inBuffer, new Date(old)),
    ]);
    await commitFanout(pool, {
      orgId: org,
      eventIds: [gone, inBuffer],
      now: new Date(),
      deliveries: [],
      batchItems: [{ webhookId: webhook, eventId: inBuffer }],
    });
    // The buffered entry carries its event's received_at, the key of the event's partition.
    const buffered = await readBatchItems(pool, webhook, 10);
    expect(buffered.map((b) => [b.eventId, b.receivedAt?.getTime()])).toEqual([[inBuffer, old]]);
    await pool.query(`UPDATE pending_fanout SET parked_at = now(), attempts = 5 WHERE event_id = $1`, [owed]);
    await pool.query(
      `INSERT INTO deliveries (id, org_id, webhook_id, status, event_ids, event_count, created_at, updated_at) VALUES ($1, $2, $3, 'succeeded', '{}', 0, $4, $4)`,
      [delivery, org, webhook, new Date(old).toISOString()],
    );
    await pool.query(
      `INSERT INTO delivery_attempts (delivery_id, webhook_id, at, status_code, duration_ms) VALUES ($1, $2, $3, 200, 1)`,
      [delivery, webhook, new Date(old).toISOString()],
    );

    const result = await dropExpiredPartitions(pool, new Date(Date.now() - 30 * DAY));
    expect(result!.dropped.deliveries).toContain(partitionName('deliveries', oldDay));
    expect(result!.dropped.delivery_attempts).toContain(partitionName('delivery_attempts', oldDay));
    expect(result!.dropped.audit_events).toContain(partitionName('audit_events', oldDay));
    expect(result!.keptEvents).toBe(2);
    expect((await pool.query(`SELECT 1 FROM deliveries WHERE id = $1`, [delivery])).rowCount).toBe(0);
    expect((await pool.query(`SELECT 1 FROM delivery_attempts WHERE delivery_id = $1`, [delivery])).rowCount).toBe(0);
    const { rows } = await pool.query<{ id: string; part: string }>(
      `SELECT id, tableoid::regclass::text AS part FROM audit_events WHERE id = ANY($1::uuid[])`,
      [[gone, owed, inBuffer]],
    );
    expect(rows.map((r) => r.id).sort()).toEqual([owed, inBuffer].sort());
    for (const r of rows) expect(r.part).toBe('audit_events_default');
    // The parked event is still readable for its release, and the buffered one for its batch, by the received_at
    // its entry carries: the lookup goes to the DEFAULT partition now that no partition covers that instant.
    expect((await readPendingEvents(pool, org, [owed])).map((e) => e.data.id)).toEqual([owed]);
    expect(
      (await readEvents(pool, org, [{ id: inBuffer, receivedAt: buffered[0]!.receivedAt }])).map((e) => e.data.id),
    ).toEqual([inBuffer]);

    // Swept from the DEFAULT partition once nothing is owed on them any more.
    await pool.query(`DELETE FROM pending_fanout WHERE event_id = $1`, [owed]);
    await pool.query(`DELETE FROM batch_items WHERE event_id = $1`, [inBuffer]);
    const swept = await sweepDefaultPartitions(pool, new Date(Date.now() - 30 * DAY));
    expect(swept.events).toBe(2);
    expect(
      (await pool.query(`SELECT 1 FROM audit_events WHERE id = ANY($1::uuid[])`, [[owed, inBuffer]])).rowCount,
    ).toBe(0);
  });

  it('sweeps deliveries of random ids and their attempts from the DEFAULT partition by age', async () => {
    const id = randomUUID();
    const old = new Date(Date.now() - 31 * DAY).toISOString();
    await pool.query(
      `INSERT INTO deliveries (id, org_id, webhook_id, status, event_ids, event_count, created_at, updated_at) VALUES ($1, $2, $3, 'failed', '{}', 0, $4, $4)`,
      [id, org, webhook, old],
    );
    await pool.query(
      `INSERT INTO delivery_attempts (delivery_id, webhook_id, at, status_code, duration_ms) VALUES ($1, $2, $3, 500, 1)`,
      [id, webhook, old],
    );
    const where = (
      await pool.query<{ part: string }>(`SELECT tableoid::regclass::text AS part FROM deliveries WHERE id = $1`, [id])
    ).rows[0]!.part;
    const swept = await sweepDefaultPartitions(pool, new Date(Date.now() - 30 * DAY));
    if (where === 'deliveries_default') {
      expect(swept.deliveries).toBeGreaterThanOrEqual(1);
      expect((await pool.query(`SELECT 1 FROM deliveries WHERE id = $1`, [id])).rowCount).toBe(0);
      expect((await pool.query(`SELECT 1 FROM delivery_attempts WHERE delivery_id = $1`, [id])).rowCount).toBe(0);
    }
  });

  /** A delivery row of `status`, created at `at` (its id in that instant's partition). */
  const deliveryAt = async (at: number, status: string, id = uuidv7({ msecs: at })): Promise<string> => {
    await pool.query(
      `INSERT INTO deliveries (id, org_id, webhook_id, status, event_ids, event_count, created_at, updated_at) VALUES ($1, $2, $3, $4, '{}', 0, $5, $5)`,
      [id, org, webhook, status, new Date(at).toISOString()],
    );
    await pool.query(
      `INSERT INTO delivery_attempts (delivery_id, webhook_id, at, status_code, duration_ms) VALUES ($1, $2, $3, 429, 1)`,
      [id, webhook, new Date(at).toISOString()],
    );
    return id;
  };

  /** Opens a transaction that has written a delivery (by id, pruned to its partition), as an attempt's record does. */
  const writing = async (id: string): Promise<Client> => {
    const client = new Client({ connectionString: databaseUrl });
    await client.connect();
    await client.query('BEGIN');
    await client.query(`UPDATE deliveries SET updated_at = updated_at WHERE id = ANY(ARRAY['${id}']::uuid[])`);
    return client;
  };

  it('creates a partition beside a transaction writing the table, without waiting for it', async () => {
    const busy = await writing(await deliveryAt(Date.now(), 'succeeded'));
    try {
      const far = periodStart(Date.now() + 120 * DAY, 'day');
      const created = await ensurePartitions(pool, new Date(far), { width: 'day', aheadMs: DAY });
      expect(created).toEqual(['deliveries', 'delivery_attempts', 'audit_events'].map((t) => partitionName(t, far)));
      // Attached with the indexes of its siblings, and no constraint left over from the attach.
      for (const table of ['deliveries', 'delivery_attempts', 'audit_events']) {
        const { rows } = await pool.query<{ name: string; indexes: number; checks: number }>(
          `SELECT c.relname AS name,
                  (SELECT count(*)::int FROM pg_index x WHERE x.indrelid = c.oid) AS indexes,
                  (SELECT count(*)::int FROM pg_constraint k WHERE k.conrelid = c.oid AND k.contype = 'c') AS checks
           FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = $1::regclass AND c.relname IN ($2, $3)`,
          [table, partitionName(table, far), partitionName(table, periodStart(Date.now(), 'day'))],
        );
        expect(rows).toHaveLength(2);
        expect(rows[0]!.indexes).toBe(rows[1]!.indexes);
        expect(rows.map((r) => r.checks)).toEqual([0, 0]);
      }
    } finally {
      await busy.query('ROLLBACK');
      await busy.end();
    }
  });

  it('keeps an expired partition for the next run while its lock stays taken, and lets queries through meanwhile', async () => {
    const old = periodStart(Date.now() - 70 * DAY, 'day');
    await ensurePartitions(pool, new Date(old), { width: 'day', aheadMs: DAY });
    const done = await deliveryAt(old + 3_600_000, 'succeeded');
    const busy = await writing(await deliveryAt(Date.now(), 'succeeded'));
    let settled = false;
    try {
      const dropping = dropExpiredPartitions(pool, new Date(old + DAY), {
        lockRetry: { ...PARTITION_LOCK_RETRY, timeoutMs: 50, tries: 6 },
      }).finally(() => {
        settled = true;
      });
      // A read of the whole table (which the detach's lock would queue) gets through while the detach still tries.
      const { rows } = await pool.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM deliveries WHERE id = $1 OR created_at < $2`,
        [done, new Date(old + DAY).toISOString()],
      );
      expect(rows[0]!.n).toBeGreaterThanOrEqual(1);
      expect(settled).toBe(false);
      const result = await dropping;
      expect(result!.kept).toEqual(
        expect.arrayContaining([partitionName('deliveries', old), partitionName('delivery_attempts', old)]),
      );
      expect(result!.dropped.deliveries ?? []).not.toContain(partitionName('deliveries', old));
      // Its attempts stay with it.
      expect((await pool.query(`SELECT 1 FROM delivery_attempts WHERE delivery_id = $1`, [done])).rowCount).toBe(1);
    } finally {
      await busy.query('ROLLBACK');
      await busy.end();
    }
    const next = await dropExpiredPartitions(pool, new Date(old + DAY));
    expect(next!.dropped.deliveries).toContain(partitionName('deliveries', old));
    expect(next!.dropped.delivery_attempts).toContain(partitionName('delivery_attempts', old));
  });

  it('never drops a delivery still in flight: its partition and attempts stay until it ends', async () => {
    const old = periodStart(Date.now() - 80 * DAY, 'day');
    await ensurePartitions(pool, new Date(old), { width: 'day', aheadMs: DAY });
    // Retried by hand near the edge (or waiting on a long 429): retrying, in a partition past the retention.
    const retried = await deliveryAt(old + 3_600_000, 'retrying');
    const leased = await deliveryAt(old + 7_200_000, 'failed');
    await pool.query(`UPDATE deliveries SET leased_until = now() + interval '1 minute' WHERE id = $1`, [leased]);

    const first = await dropExpiredPartitions(pool, new Date(old + DAY));
    expect(first!.kept).toEqual(
      expect.arrayContaining([partitionName('deliveries', old), partitionName('delivery_attempts', old)]),
    );
    expect(
      (await pool.query(`SELECT 1 FROM deliveries WHERE id = ANY($1::uuid[])`, [[retried, leased]])).rowCount,
    ).toBe(2);
    expect(
      (await pool.query(`SELECT 1 FROM delivery_attempts WHERE delivery_id = ANY($1::uuid[])`, [[retried, leased]]))
        .rowCount,
    ).toBe(2);

    // Once both have ended, the next run drops the partition.
    await pool.query(`UPDATE deliveries SET status = 'succeeded' WHERE id = $1`, [retried]);
    expect((await dropExpiredPartitions(pool, new Date(old + DAY)))!.kept).toContain(partitionName('deliveries', old));
    await pool.query(`UPDATE deliveries SET leased_until = NULL WHERE id = $1`, [leased]);
    const last = await dropExpiredPartitions(pool, new Date(old + DAY));
    expect(last!.dropped.deliveries).toContain(partitionName('deliveries', old));
    expect(last!.dropped.delivery_attempts).toContain(partitionName('delivery_attempts', old));
  });

  it('sweeps no delivery in flight from the DEFAULT partition, nor its attempts', async () => {
    // An id of 1990: no partition covers it.
    const at = Date.UTC(1990, 0, 1);
    const [inFlight, ended] = [uuidv7({ msecs: at }), uuidv7({ msecs: at + 1 })];
    await deliveryAt(Date.now() - 40 * DAY, 'pending', inFlight);
    await deliveryAt(Date.now() - 40 * DAY, 'failed', ended);
    const swept = await sweepDefaultPartitions(pool, new Date(Date.now() - 30 * DAY));
    expect(swept.deliveries).toBeGreaterThanOrEqual(1);
    expect(
      (
        await pool.query<{ id: string }>(`SELECT id FROM deliveries WHERE id = ANY($1::uuid[])`, [[inFlight, ended]])
      ).rows.map((r) => r.id),
    ).toEqual([inFlight]);
    expect(
      (
        await pool.query<{ id: string }>(
          `SELECT delivery_id AS id FROM delivery_attempts WHERE delivery_id = ANY($1::uuid[])`,
          [[inFlight, ended]],
        )
      ).rows.map((r) => r.id),
    ).toEqual([inFlight]);
  });
});
