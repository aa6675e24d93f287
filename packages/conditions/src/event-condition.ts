// Webhook conditions (SPEC 6.2, CONTRACT 7a): one CEL expression over the variable `event`, checked against the
// event catalogue when a webhook is saved and evaluated for every event at delivery.
//
// Types the condition sees:
// - event.id, event.org_id, event.action, event.actor.{type,id,name}, event.resource.{type,id,name}: string
// - event.resources: map<string, string>; event.context: map<string, dyn> (values as JSON gives them)
// - event.created_at: timestamp (the ISO 8601 string converted), compare with timestamp("2026-01-01T00:00:00Z")
// - event.changes: list<dyn>
// - event.payload.<field>: typed from the catalogue for the fields the subscribed actions carry. JSON numbers are
//   CEL doubles: `score > 0.5`, `score > 5`, `score == 1` and `score == 1.0` all work (ordering across int and
//   double is CEL's; == and != across them are registered in cel.ts). Arithmetic and list literals still need
//   double literals: `duration_ms / 1000.0`, `limit in [100.0, 1000.0]`; the save-time issue says so.
//   A payload field the event lacks (or that is null) is a missing key: reading it is an evaluation error and the
//   event is skipped (SPEC 6.2.6); `has(event.payload.x)` tests for it.

import type { Environment } from '@marcbachmann/cel-js';
import { payloadFieldsOf, type PayloadFieldType } from '@gatehook/core/event-catalogue';
import {
  compileBoolean,
  createConditionEnvironment,
  evaluateBoolean,
  type BooleanProgram,
  type ConditionIssue,
  type EvaluationResult,
} from './cel';
import { costIssues, payloadFieldsNamed } from './condition-ast';
import type { AuditEventData } from '@gatehook/core/audit-event';

export type { ConditionIssue, EvaluationResult } from './cel';

/** The outcome of compiling a webhook condition. */
export type CompileResult = { ok: true; condition: CompiledCondition } | { ok: false; issues: ConditionIssue[] };

/** A compiled webhook condition. */
export interface CompiledCondition {
  readonly expression: string;
  evaluate(event: ConditionEventInput): EvaluationResult;
}

/** The delivered audit event (SPEC 2.4 data), before reshaping. */
export type ConditionEventInput = AuditEventData;

const CEL_TYPE_OF_PAYLOAD_FIELD: Record<PayloadFieldType, string> = {
  string: 'string',
  number: 'double',
  boolean: 'bool',
  map: 'map<string, dyn>',
  list: 'list<dyn>',
};

// The payload's CEL type depends on the subscribed actions, so each distinct set of payload fields gets its own
// environment. There are few such sets in practice; the bound only stops a pathological caller.
const MAX_ENVIRONMENTS = 128;
const environments = new Map<string, Environment>();

function environmentFor(fields: ReadonlyMap<string, PayloadFieldType>): Environment {
  const payload: Record<string, string> = {};
  for (const [name, type] of fields) payload[name] = CEL_TYPE_OF_PAYLOAD_FIELD[type];
  const key = JSON.stringify(Object.entries(payload).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  const cached = environments.get(key);
  if (cached) return cached;
  const env = createConditionEnvironment().registerVariable({
    name: 'event',
    schema: {
      id: 'string',
      org_id: 'string',
      action: 'string',
      actor: { type: 'string', id: 'string', name: 'string' },
      resource: { type: 'string', id: 'string', name: 'string' },
      resources: 'map<string, string>',
      context: 'map<string, dyn>',
      // cel-js 8 crashes on a schema field typed "timestamp"; the protobuf name is the same CEL type.
      created_at: 'google.protobuf.Timestamp',
      payload,
      changes: 'list<dyn>',
    },
  });
  if (environments.size >= MAX_ENVIRONMENTS) {
    const oldest = environments.keys().next().value;
    if (oldest !== undefined) environments.delete(oldest);
  }
  environments.set(key, env);
  return env;
}

/** The message of SPEC 6.2.8's validation error, naming the field. */
function unknownPayloadField(field: string): ConditionIssue {
  return { message: `payload field "${field}" is carried by none of the subscribed events` };
}

/**
 * Save-time check: syntax, boolean result type, length <= 1024, and every event.payload.<field> named (incl.
 * has(event.payload.x)) is carried by at least one subscribed action (for `*`, every catalogue field).
 */
export function compileEventCondition(expression: string, events: readonly string[]): CompileResult {
  const fields = payloadFieldsOf(events);
  const compiled = compileBoolean(environmentFor(fields), expression, (ast) => [
    ...payloadFieldsNamed(ast)
      .filter((field) => !fields.has(field))
      .map(unknownPayloadField),
    ...costIssues(ast),
  ]);
  if (!compiled.ok) return compiled;
  return { ok: true, condition: new EventCondition(expression, compiled.program) };
}

class EventCondition implements CompiledCondition {
  constructor(
    readonly expression: string,
    private readonly program: BooleanProgram,
  ) {}

  evaluate(event: ConditionEventInput): EvaluationResult {
    let reshaped: Record<string, unknown>;
    try {
      reshaped = reshapeEvent(event);
    } catch (err) {
      return { ok: false, error: err instanceof Error ? err.message : String(err) };
    }
    return evaluateBoolean(this.program, { event: reshaped });
  }
}

/** SPEC 6.2.4: related fields grouped (actor_display_name becomes event.actor.name), created_at a timestamp. */
function reshapeEvent(event: ConditionEventInput): Record<string, unknown> {
  const createdAt = new Date(event.created_at);
  if (Number.isNaN(createdAt.getTime()))
    throw new Error(`created_at is not a timestamp: ${JSON.stringify(event.created_at)}`);
  return {
    id: event.id,
    org_id: event.org_id,
    action: event.action,
    actor: { type: event.actor_type, id: event.actor_id, name: event.actor_display_name },
    resource: { type: event.resource_type, id: event.resource_id, name: event.resource_display_name },
    resources: event.resources,
    context: event.context,
    created_at: createdAt,
    payload: withoutNulls(event.payload),
    changes: event.changes,
  };
}

/** A null payload field counts as absent, so that has() is false and reading it is a missing key. */
function withoutNulls(payload: Record<string, unknown>): Record<string, unknown> {
  for (const key in payload) {
    if (payload[key] === null || payload[key] === undefined) {
      return Object.fromEntries(Object.entries(payload).filter(([, value]) => value !== null && value !== undefined));
    }
  }
  return payload;
}
