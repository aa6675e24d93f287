import type { Request } from 'express';
import type { Principal } from '@gatehook/core/api-keys';

/** Who is acting, for audit events: the API key and the request context. */
export interface Actor {
  principal: Principal;
  context: Record<string, string>;
}

/** The actor of a request: its API key, the client address and a bounded user agent. */
export function actorOf(principal: Principal, req: Request): Actor {
  const context: Record<string, string> = {};
  if (req.ip) context.ip = req.ip;
  const agent = req.get('user-agent');
  if (agent) context.user_agent = agent.slice(0, 256);
  return { principal, context };
}

/** What an audit event is about; its payload names the resource as `<payloadKey>_id` and `<payloadKey>_name`. */
export interface AuditedResource {
  type: string;
  payloadKey: string;
  id: string;
  name: string;
}

/** The fields every audit event of an API key's change to one resource carries (SPEC 2.4). */
export function auditFields(actor: Actor, resource: AuditedResource) {
  return {
    orgId: actor.principal.orgId,
    actorType: 'user' as const,
    actorId: actor.principal.keyId,
    actorDisplayName: actor.principal.keyName,
    context: actor.context,
    resourceType: resource.type,
    resourceId: resource.id,
    resourceDisplayName: resource.name,
    payload: { [`${resource.payloadKey}_id`]: resource.id, [`${resource.payloadKey}_name`]: resource.name } as Record<
      string,
      unknown
    >,
  };
}
