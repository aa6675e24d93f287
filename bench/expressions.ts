// Conditions and templates: the per-event work of fan-out. References are the cheapest way to do the same job
// in plain JavaScript (a hand-written predicate; JSON.stringify of the default envelope).
import { compileEventCondition } from '@gatehook/conditions/event-condition';
import { renderEnvelope, type AuditEventData } from '@gatehook/delivery/render/envelope';
import { checkPayloadTemplate, templateData } from '@gatehook/delivery/render/payload-template';
import { throughput, type Figure } from './measure';

/** The audit event every benchmark uses (an anomaly finding, with resources, context and payload). */
export const SAMPLE_EVENT: AuditEventData = {
  id: '0193a4f0-0000-7000-8000-000000001042',
  org_id: '6a1d2c3b-4e5f-4a6b-8c7d-9e0f1a2b3c4d',
  action: 'anomaly_finding.created',
  actor_type: 'system',
  actor_id: 'detector-volume',
  actor_display_name: 'Volume detector <beta>',
  resource_type: 'anomaly_finding',
  resource_id: 'f-1042',
  resource_display_name: 'Unusual tool volume',
  resources: { agent_slug: 'support-bot', mcp_slug: 'github' },
  context: { ip: '10.1.2.3', country: 'DE', trace_id: 'abc123' },
  changes: [],
  payload: { severity: 'high', score: 0.87, detector: 'volume', subject: 'agent:support-bot' },
  created_at: '2026-03-04T10:20:30.123Z',
};

const CONDITION =
  'event.action.startsWith("anomaly_finding.") && event.payload.severity in ["high", "critical"] && event.payload.score > 0.5';

// A Slack incoming-webhook body.
const SLACK_TEMPLATE = `{"channel": {{ json .Vars.CHANNEL }},
 "text": {{ printf "%s: %s" .String (escape .ResourceDisplayName) | json }},
 "blocks": [{"type": "section", "text": {"type": "mrkdwn",
   "text": {{ printf "*%s* by %s (severity %s, score %.2f)" .String (escape .ActorDisplayName) .Payload.severity .Payload.score | json }}}},
  {"type": "context", "elements": [{"type": "mrkdwn", "text": {{ printf "%s · %s" .ID .CreatedAt | json }}}]}]}`;

export function expressionFigures(seconds: number): Figure[] {
  const compiled = compileEventCondition(CONDITION, ['anomaly_finding.created']);
  if (!compiled.ok) throw new Error(compiled.issues.map((i) => i.message).join('; '));
  const condition = compiled.condition;
  const handWritten = (e: AuditEventData) =>
    e.action.startsWith('anomaly_finding.') &&
    ['high', 'critical'].includes(e.payload.severity as string) &&
    (e.payload.score as number) > 0.5;
  const check = condition.evaluate(SAMPLE_EVENT);
  if (!check.ok || !check.matches || !handWritten(SAMPLE_EVENT))
    throw new Error('benchmark condition does not match its event');

  const vars = { CHANNEL: '#alerts' };
  const template = checkPayloadTemplate(SLACK_TEMPLATE, vars, ['anomaly_finding.created']);
  if (!template.ok) throw new Error(template.message);
  const compiledTemplate = template.template;

  return [
    throughput(
      'condition evaluations (3-clause CEL)',
      'evals/s',
      () => condition.evaluate(SAMPLE_EVENT),
      'same predicate in plain JS',
      () => handWritten(SAMPLE_EVENT),
      seconds,
    ),
    throughput(
      'template renders (Slack-style)',
      'renders/s',
      () => compiledTemplate.execute(templateData(SAMPLE_EVENT, vars)),
      'JSON.stringify of the envelope',
      () => renderEnvelope(SAMPLE_EVENT),
      seconds,
    ),
  ];
}
