import { renderEnvelope, toEnvelope, type AuditEventData } from '@gatehook/delivery/render/envelope';

const event: AuditEventData = {
  id: '6f1c0a52-8d4e-4b8e-9a1f-2c3d4e5f6a7b',
  org_id: '11111111-2222-4333-8444-555555555555',
  action: 'anomaly_finding.created',
  actor_type: 'system',
  actor_id: 'detector',
  actor_display_name: 'Anomaly detector',
  resource_type: 'anomaly_finding',
  resource_id: 'af_1',
  resource_display_name: 'Burst of denied calls',
  resources: { agent_slug: 'triage', tool_key: 'github.create_issue' },
  context: { ip: '203.0.113.9', trace_id: 'abc' },
  changes: [],
  payload: { severity: 'high', score: 0.93, detector: 'rate', subject: { kind: 'agent' } },
  created_at: '2024-11-21T18:05:45.123Z',
};

describe('toEnvelope', () => {
  it('sets type to the action and timestamp to created_at (CONTRACT 5)', () => {
    const envelope = toEnvelope(event);
    expect(envelope.type).toBe('anomaly_finding.created');
    expect(envelope.timestamp).toBe('2024-11-21T18:05:45.123Z');
    expect(envelope.data).toEqual(event);
  });

  it('orders the envelope as type, timestamp, data and data as SPEC 2.4 lists it', () => {
    const envelope = toEnvelope(event);
    expect(Object.keys(envelope)).toEqual(['type', 'timestamp', 'data']);
    expect(Object.keys(envelope.data)).toEqual([
      'id',
      'org_id',
      'action',
      'actor_type',
      'actor_id',
      'actor_display_name',
      'resource_type',
      'resource_id',
      'resource_display_name',
      'resources',
      'context',
      'changes',
      'payload',
      'created_at',
    ]);
  });

  it('gives the same JSON whatever order the fields were loaded in', () => {
    const shuffled = Object.fromEntries(Object.entries(event).reverse()) as unknown as AuditEventData;
    expect(renderEnvelope(shuffled)).toBe(renderEnvelope(event));
  });

  it('leaves out properties that are not part of the audit event', () => {
    const row = { ...event, internal_sequence: 42, fanned_out_at: null } as AuditEventData;
    expect(JSON.parse(renderEnvelope(row)).data).toEqual(event);
  });

  it('is stable across calls, so a retried event carries the same body', () => {
    expect(renderEnvelope(event)).toBe(renderEnvelope(structuredClone(event)));
  });

  it('does not modify the event it wraps', () => {
    const copy = structuredClone(event);
    toEnvelope(event);
    expect(event).toEqual(copy);
  });
});

describe('renderEnvelope', () => {
  it('renders compact JSON of the envelope', () => {
    const json = renderEnvelope(event);
    expect(json).toBe(JSON.stringify({ type: event.action, timestamp: event.created_at, data: event }));
    expect(json).not.toMatch(/\n/);
  });
});
