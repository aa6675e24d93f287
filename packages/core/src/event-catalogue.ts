/** The type of a payload field, as conditions and the sample event see it. */
export type PayloadFieldType = 'string' | 'number' | 'boolean' | 'map' | 'list';

export interface PayloadField {
  name: string;
  type: PayloadFieldType;
}

export interface EventType {
  action: string;
  description: string;
  payloadFields: PayloadField[];
}

const s = (name: string): PayloadField => ({ name, type: 'string' });
const n = (name: string): PayloadField => ({ name, type: 'number' });
const b = (name: string): PayloadField => ({ name, type: 'boolean' });
const m = (name: string): PayloadField => ({ name, type: 'map' });

/**
 * Every action that can be subscribed to, with the payload fields it carries. The same list validates
 * `events` on save, the payload fields a condition may name (SPEC 6.2.8) and backs `GET /event-types`.
 */
export const EVENT_CATALOGUE: readonly EventType[] = [
  {
    action: 'gateway.tool.called',
    description: 'A tool call passed through the gateway.',
    payloadFields: [s('tool_key'), s('mcp_slug'), n('duration_ms'), s('status')],
  },
  {
    action: 'gateway.tool.error',
    description: 'A tool call failed at the upstream MCP server or in the gateway.',
    payloadFields: [s('tool_key'), s('mcp_slug'), n('duration_ms'), s('error_code'), s('error_message')],
  },
  {
    action: 'gateway.tool.denied',
    description: 'A tool call was denied by a policy or a rate limit rule.',
    payloadFields: [s('tool_key'), s('mcp_slug'), s('reason'), s('policy_id'), s('rule_id')],
  },
  {
    action: 'policy.created',
    description: 'An access policy was created.',
    payloadFields: [s('policy_name'), s('effect')],
  },
  {
    action: 'policy.updated',
    description: 'An access policy was changed.',
    payloadFields: [s('policy_name'), s('effect')],
  },
  {
    action: 'policy.deleted',
    description: 'An access policy was deleted.',
    payloadFields: [s('policy_name')],
  },
  {
    action: 'anomaly_finding.created',
    description: 'An anomaly detector raised a finding.',
    payloadFields: [s('severity'), n('score'), s('detector'), s('subject')],
  },
  {
    action: 'anomaly_finding.escalated',
    description: 'An anomaly finding was escalated.',
    payloadFields: [s('severity'), n('score'), s('detector'), s('subject'), s('escalated_to')],
  },
  {
    action: 'tag.created',
    description: 'A tag was created.',
    payloadFields: [s('tag_name'), s('color')],
  },
  {
    action: 'webhook.created',
    description: 'A webhook was created.',
    payloadFields: [s('webhook_id'), s('webhook_name')],
  },
  {
    action: 'webhook.updated',
    description: 'A webhook was changed (including enable, disable, pause and resume).',
    payloadFields: [s('webhook_id'), s('webhook_name')],
  },
  {
    action: 'webhook.deleted',
    description: 'A webhook was deleted.',
    payloadFields: [s('webhook_id'), s('webhook_name')],
  },
  {
    action: 'webhook.secret_rotated',
    description: "A webhook's signing secret was rotated.",
    payloadFields: [s('webhook_id'), s('webhook_name'), s('previous_valid_until')],
  },
  {
    action: 'webhook.disabled',
    description: 'A webhook was disabled automatically (reason gone, circuit_breaker or template_error).',
    payloadFields: [s('webhook_id'), s('webhook_name'), s('reason')],
  },
  {
    action: 'webhook.recovery_started',
    description: "A recover task started: the webhook's failed deliveries of a window get a fresh cycle of attempts.",
    payloadFields: [s('webhook_id'), s('webhook_name'), s('task_id'), s('since'), s('until')],
  },
  {
    action: 'webhook.replay_started',
    description: "A replay task started: the organisation's events of a window are sent again to the webhook.",
    payloadFields: [s('webhook_id'), s('webhook_name'), s('task_id'), s('since'), s('until')],
  },
  {
    action: 'webhook.test',
    description: 'A test event sent by the test operation; delivered only to the tested webhook.',
    payloadFields: [s('webhook_id'), s('webhook_name')],
  },
  {
    action: 'rate_limit_rule.created',
    description: 'A rate limit rule was created.',
    payloadFields: [s('rule_id'), s('rule_name')],
  },
  {
    action: 'rate_limit_rule.updated',
    description: 'A rate limit rule was changed.',
    payloadFields: [s('rule_id'), s('rule_name')],
  },
  {
    action: 'rate_limit_rule.deleted',
    description: 'A rate limit rule was deleted.',
    payloadFields: [s('rule_id'), s('rule_name')],
  },
  {
    action: 'rate_limit.exceeded',
    description: 'A rate limit rule ran out of budget (recorded once per rule, key and window).',
    payloadFields: [
      s('rule_id'),
      s('rule_name'),
      s('rule_action'),
      n('limit'),
      n('window_seconds'),
      s('key'),
      m('call'),
      b('denied'),
    ],
  },
];

const byAction = new Map(EVENT_CATALOGUE.map((type) => [type.action, type]));

/** The catalogue entry of an action, or undefined for an unknown action. */
export function eventType(action: string): EventType | undefined {
  return byAction.get(action);
}

/** Whether an action can be subscribed to. */
export function isKnownAction(action: string): boolean {
  return byAction.has(action);
}

/**
 * Payload fields carried by at least one of the subscribed actions; `*` carries every field of the catalogue.
 * Conditions may only name these (SPEC 6.2.8).
 */
export function payloadFieldsOf(events: readonly string[]): Map<string, PayloadFieldType> {
  const types = events.includes('*') ? EVENT_CATALOGUE : events.map(eventType).filter((t) => t !== undefined);
  const fields = new Map<string, PayloadFieldType>();
  for (const type of types)
    for (const field of type.payloadFields) if (!fields.has(field.name)) fields.set(field.name, field.type);
  return fields;
}
