import { threadClock } from '@gatehook/core/cpu-deadline';
import { EVENT_CATALOGUE, eventType, type PayloadFieldType } from '@gatehook/core/event-catalogue';
import { actionTitle } from '@gatehook/core/titles';
import { parseTemplate, TemplateError, type ExecLimits, type Template } from '@gatehook/templates/template';
import { defaultLimits } from '@gatehook/templates/exec';
import type { AuditEventData } from './envelope';
import { jsonProblem } from './json-check';

/** The data a payload template sees (CONTRACT 7a). */
export function templateData(event: AuditEventData, vars: Record<string, string>): Record<string, unknown> {
  return {
    ID: event.id,
    OrgID: event.org_id,
    Action: event.action,
    ActorType: event.actor_type,
    ActorID: event.actor_id,
    ActorDisplayName: event.actor_display_name,
    ResourceType: event.resource_type,
    ResourceID: event.resource_id,
    ResourceDisplayName: event.resource_display_name,
    Resources: event.resources,
    Context: event.context,
    Payload: event.payload,
    Changes: event.changes,
    CreatedAt: event.created_at,
    Vars: vars,
    String: actionTitle(event.action),
  };
}

const sampleValue: Record<PayloadFieldType, unknown> = {
  string: 'sample',
  number: 1.5,
  boolean: true,
  map: { key: 'value' },
  list: ['item'],
};

/**
 * An event with every field populated, for the save-time test render (SPEC 6.3.4): the first subscribed action
 * (or every catalogue action's fields for `*`), with a value for each payload field the subscription can carry.
 */
export function sampleEvent(events: readonly string[], orgId = '00000000-0000-4000-8000-000000000000'): AuditEventData {
  const all = events.includes('*');
  const types = all ? EVENT_CATALOGUE : events.map(eventType).filter((t) => t !== undefined);
  const payload: Record<string, unknown> = {};
  for (const type of types) for (const field of type.payloadFields) payload[field.name] ??= sampleValue[field.type];
  return {
    id: '0193a4f0-0000-7000-8000-000000000001',
    org_id: orgId,
    action: all ? 'anomaly_finding.created' : (events[0] ?? 'anomaly_finding.created'),
    actor_type: 'user',
    actor_id: 'user-1',
    actor_display_name: 'Ada <admin> & "ops"',
    resource_type: 'policy',
    resource_id: 'resource-1',
    resource_display_name: 'Sample resource',
    resources: {
      mcp_id: 'mcp-1',
      mcp_slug: 'github',
      agent_slug: 'triage',
      tool_key: 'github.create_issue',
      policy_display_name: 'Default',
    },
    context: { ip: '203.0.113.7', user_agent: 'sample-agent/1.0', trace_id: 'trace-1', country: 'NL' },
    changes: [{ field: 'name', old: 'before', new: 'after' }],
    payload,
    created_at: '2026-01-01T12:00:00.000Z',
  };
}

/** Variable names a template reads through `.Vars.<name>` or `index .Vars "<name>"`. */
export function referencedVars(text: string): string[] {
  const names = new Set<string>();
  for (const m of text.matchAll(/\.Vars\.([A-Za-z_][A-Za-z0-9_]*)/g)) names.add(m[1]!);
  for (const m of text.matchAll(/index\s+\.Vars\s+"([^"\\]*)"/g)) names.add(m[1]!);
  return [...names];
}

function describe(error: unknown): string {
  return error instanceof TemplateError ? error.message : (error as Error).message;
}

/**
 * The save-time render runs on the API's event loop while a request waits: a quarter of a second of wall-clock time
 * at most (what the API's other requests wait for, however busy the machine), so that a hostile template costs one
 * slow 422 and `/healthz` still answers within a second. The sample event is small; a real template renders it in
 * microseconds. Output and steps are bounded as at delivery.
 */
export const SAVE_RENDER_LIMITS: Partial<ExecLimits> = { maxDurationMs: 250 };

/**
 * Renders of real events (deliveries, previews, test sends) run on render threads and count their time budget in
 * the thread's CPU time (core/cpu-deadline.ts): a valid template within its budget renders however busy the
 * machine is, and one that is not still stops at its budget of CPU time (or five times it of wall-clock time).
 * Elsewhere (a main thread) the budget is wall-clock time.
 */
const RENDER_TIMER: Partial<ExecLimits> = { timer: threadClock.deadline };

/**
 * The render budget of one API request that renders (CONTRACT 15): a preview's events together, or a test send's
 * event, get the save-time budget in all, not one per event. Such renders run in the API's render pool
 * (render/pool.ts), never on its event loop, so the API's other requests do not wait for them.
 */
export const REQUEST_RENDER_BUDGET_MS = SAVE_RENDER_LIMITS.maxDurationMs!;

export type TemplateCheck = { ok: true; template: Template } | { ok: false; message: string };

/**
 * Save-time check of a payload template (SPEC 6.3.4, 7.1): it parses, names no unset variable, and renders the
 * sample event into valid JSON with unique member names.
 */
export function checkPayloadTemplate(
  text: string,
  vars: Record<string, string>,
  events: readonly string[],
): TemplateCheck {
  let template: Template;
  try {
    template = parseTemplate('template', text);
  } catch (error) {
    return { ok: false, message: describe(error) };
  }
  const unset = referencedVars(text).filter((name) => !Object.hasOwn(vars, name));
  if (unset.length > 0)
    return {
      ok: false,
      message: `the template uses unset variable${unset.length > 1 ? 's' : ''} ${unset.map((n) => `.Vars.${n}`).join(', ')}`,
    };
  let output: string;
  try {
    output = template.execute(templateData(sampleEvent(events), vars), { limits: SAVE_RENDER_LIMITS });
  } catch (error) {
    return { ok: false, message: `rendering a sample event failed: ${describe(error)}` };
  }
  const problem = jsonProblem(output);
  if (problem) return { ok: false, message: `rendering a sample event gives ${problem}` };
  return { ok: true, template };
}

/**
 * Renders one event through a compiled template and checks the result is JSON with unique member names, its time
 * budget counted by this thread's clock (CPU time on a render thread). `limits` narrows the execution limits.
 */
export function renderWithTemplate(
  template: Template | Error,
  event: AuditEventData,
  vars: Record<string, string>,
  limits?: Partial<ExecLimits>,
): { ok: true; json: string } | { ok: false; error: string } {
  if (template instanceof Error)
    return { ok: false, error: `the stored template no longer parses: ${template.message}` };
  let output: string;
  try {
    output = template.execute(templateData(event, vars), { limits: { ...RENDER_TIMER, ...limits } });
  } catch (error) {
    return { ok: false, error: describe(error) };
  }
  const problem = jsonProblem(output);
  return problem ? { ok: false, error: `the rendered body is ${problem}` } : { ok: true, json: output };
}
