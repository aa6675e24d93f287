import { randomBytes } from 'node:crypto';
import type { OutboxEvent } from '@gatehook/db/outbox';
import { uuidV7Floor } from '@gatehook/db/uuid-v7';

/** A UUIDv7 of the instant (now by default), random bits after the time, as RFC 9562 lays them out. */
export function uuidv7(options: { msecs?: number } = {}): string {
  const floor = uuidV7Floor(options.msecs ?? Date.now());
  const hex = randomBytes(10).toString('hex');
  return `${floor.slice(0, 14)}7${hex.slice(0, 3)}-${(8 + (parseInt(hex[3]!, 16) & 3)).toString(16)}${hex.slice(4, 7)}-${hex.slice(7, 19)}`;
}

/** An audit event as ingestion hands it to `insertAuditEvents`: a client-chosen id, received at `receivedAt`. */
export function outboxEvent(orgId: string, id: string, receivedAt: Date, action = 'tag.created'): OutboxEvent {
  return {
    receivedAt,
    data: {
      id,
      org_id: orgId,
      action,
      actor_type: 'user',
      actor_id: 'u1',
      actor_display_name: 'U',
      resource_type: 'tag',
      resource_id: 't1',
      resource_display_name: 'T',
      resources: {},
      context: { ip: '10.0.0.1' },
      changes: [],
      payload: { name: 'x' },
      created_at: receivedAt.toISOString(),
    },
  };
}
