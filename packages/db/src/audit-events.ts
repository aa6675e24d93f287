import { randomUUID } from 'node:crypto';
import type { Prisma } from './generated/client';

/** One field of a `changes` diff. Secret fields appear only as masks or names, never as values. */
export interface Change {
  field: string;
  old: unknown;
  new: unknown;
}

/**
 * An audit event Gatehook records itself (a webhook change, an automatic disable), before storage. The gateway's
 * events come in through ingestion instead (`AuditEventInput`, packages/delivery/src/audit-event-input.ts).
 */
export interface OwnAuditEvent {
  id?: string;
  orgId: string;
  action: string;
  actorType: 'user' | 'agent' | 'system';
  actorId?: string;
  actorDisplayName?: string;
  resourceType?: string;
  resourceId?: string;
  resourceDisplayName?: string;
  resources?: Record<string, string>;
  context?: Record<string, string>;
  changes?: Change[];
  payload?: Record<string, unknown>;
  createdAt?: Date;
}

/**
 * Records an audit event inside the caller's transaction, with its `pending_fanout` row: it waits there until
 * the worker fans it out, so a change and its event commit together or not at all.
 */
export async function recordAuditEvent(tx: Prisma.TransactionClient, input: OwnAuditEvent): Promise<string> {
  const id = input.id ?? randomUUID();
  const at = input.createdAt ?? new Date();
  await tx.auditEvent.create({
    data: {
      id,
      orgId: input.orgId,
      action: input.action,
      actorType: input.actorType,
      actorId: input.actorId ?? '',
      actorDisplayName: input.actorDisplayName ?? '',
      resourceType: input.resourceType ?? '',
      resourceId: input.resourceId ?? '',
      resourceDisplayName: input.resourceDisplayName ?? '',
      resources: input.resources ?? {},
      context: input.context ?? {},
      changes: (input.changes ?? []) as unknown as Prisma.InputJsonValue,
      payload: (input.payload ?? {}) as Prisma.InputJsonValue,
      createdAt: at,
      // The same clock as the change it records, so "received after the webhook became active" is exact.
      receivedAt: at,
    },
  });
  await tx.pendingFanout.create({ data: { orgId: input.orgId, eventId: id, receivedAt: at } });
  return id;
}
