import { toAuditEventData, type AuditEventFields } from './audit-event';

const fields = {
  action: 'tag.created',
  actor_type: 'user',
  actor_id: 'user-1',
  actor_display_name: 'Ada',
  resource_type: 'tag',
  resource_id: 'tag-1',
  resource_display_name: 'Tag one',
  resources: { tag: 'tag-1' },
  context: { ip: '10.0.0.1' },
  changes: [{ field: 'name' }],
  payload: { note: 'x' },
};

describe('toAuditEventData', () => {
  it("drops a source's extra properties (the declared order is render/envelope.test.ts's)", () => {
    const data = toAuditEventData({
      ...fields,
      id: 'evt-1',
      org_id: 'org-1',
      created_at: '2026-01-01T00:00:00.000Z',
      received_ms: 1,
    } as AuditEventFields);
    expect(data).not.toHaveProperty('received_ms');
    expect(data).toMatchObject({ id: 'evt-1', org_id: 'org-1', created_at: '2026-01-01T00:00:00.000Z' });
  });

  it('takes the identity given apart over any the fields carry, with the same JSON as the one-argument form', () => {
    const identity = { id: 'evt-2', org_id: 'org-2', created_at: '2026-02-02T00:00:00.000Z' };
    // A row as a reader selects it carries its own columns too; the identity given apart wins.
    const row = { ...fields, id: 'stale', org_id: 'stale', created_at: 'stale' };
    const apart = toAuditEventData(row, identity);
    expect(JSON.stringify(apart)).toBe(JSON.stringify(toAuditEventData({ ...fields, ...identity })));
  });

  it('empties a JSON field of the wrong shape', () => {
    const data = toAuditEventData(
      { ...fields, resources: [1], context: 'x', changes: {}, payload: null },
      { id: 'e', org_id: 'o', created_at: 'c' },
    );
    expect([data.resources, data.context, data.changes, data.payload]).toEqual([{}, {}, [], {}]);
  });
});
