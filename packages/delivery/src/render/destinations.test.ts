import { z } from 'zod';
import { DESTINATIONS } from '@gatehook/core/webhook-schema';
import { DESTINATION_PRESETS, type DestinationPreset } from './destinations';
import { previewBodies } from './preview';

const orgId = '00000000-0000-4000-8000-0000000000aa';
const str = z.string().min(1);
const iso = z.iso.datetime({ offset: true });

// What each receiver's documentation says a request body must hold (required fields and their types).
const slack = z.object({ text: str });
const teams = z.object({
  type: z.literal('message'),
  attachments: z
    .array(
      z.object({
        contentType: z.literal('application/vnd.microsoft.card.adaptive'),
        content: z.object({
          type: z.literal('AdaptiveCard'),
          version: str,
          body: z.array(z.object({ type: z.literal('TextBlock'), text: str })).min(1),
        }),
      }),
    )
    .length(1),
});
const discord = z.object({
  content: z.string().min(1).max(2000),
  allowed_mentions: z.object({ parse: z.array(z.string()).length(0) }),
});
const pagerduty = z.object({
  routing_key: z.literal('R0UT1NG'),
  event_action: z.enum(['trigger', 'acknowledge', 'resolve']),
  dedup_key: str.max(255),
  payload: z.object({
    summary: str.max(1024),
    source: str,
    severity: z.enum(['critical', 'error', 'warning', 'info']),
    timestamp: iso,
    custom_details: z.record(z.string(), z.unknown()),
  }),
});
const opsgenie = z.object({
  message: str.max(130),
  alias: str.max(512),
  description: z.string().max(15000),
  priority: z.enum(['P1', 'P2', 'P3', 'P4', 'P5']),
  details: z.record(z.string(), z.string()),
});
const datadog = z
  .array(z.object({ ddsource: str, service: str, ddtags: str, message: str }))
  .min(1)
  .max(1000);
const splunk = z.object({
  time: z.number().positive(),
  source: str,
  sourcetype: str,
  event: z.object({ id: str, action: str }),
});
const elastic = z.object({
  '@timestamp': iso,
  message: str,
  event: z.object({ action: str, kind: z.literal('event') }),
});
const sumo = z.object({ timestamp: iso, message: str, action: str });
const sentinel = z
  .array(z.object({ TimeGenerated: iso, Action: str, EventId: str, Payload: z.record(z.string(), z.unknown()) }))
  .min(1);
const chronicle = z.object({ event_time: iso, product: str, action: str });
const envelope = z.object({ type: str, timestamp: iso, data: z.object({ id: str, action: str }) });

const lines = (body: string) =>
  body
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as unknown);
const receivers: Record<DestinationPreset['id'], { contentType: string; check(body: string): void }> = {
  generic: { contentType: 'application/json', check: (b) => envelope.parse(JSON.parse(b)) },
  slack: { contentType: 'application/json', check: (b) => slack.parse(JSON.parse(b)) },
  teams: { contentType: 'application/json', check: (b) => teams.parse(JSON.parse(b)) },
  discord: { contentType: 'application/json', check: (b) => discord.parse(JSON.parse(b)) },
  pagerduty: { contentType: 'application/json', check: (b) => pagerduty.parse(JSON.parse(b)) },
  opsgenie: { contentType: 'application/json', check: (b) => opsgenie.parse(JSON.parse(b)) },
  datadog: { contentType: 'application/json', check: (b) => datadog.parse(JSON.parse(b)) },
  splunk: { contentType: 'application/x-ndjson', check: (b) => lines(b).forEach((l) => splunk.parse(l)) },
  elastic: { contentType: 'application/x-ndjson', check: (b) => lines(b).forEach((l) => elastic.parse(l)) },
  sumo_logic: { contentType: 'application/x-ndjson', check: (b) => lines(b).forEach((l) => sumo.parse(l)) },
  sentinel: { contentType: 'application/json', check: (b) => sentinel.parse(JSON.parse(b)) },
  chronicle: { contentType: 'application/x-ndjson', check: (b) => lines(b).forEach((l) => chronicle.parse(l)) },
};

const event = (n: number) => ({
  id: `0193a4f0-0000-7000-8000-00000000000${n}`,
  action: 'anomaly_finding.created',
  actor_type: 'agent',
  actor_display_name: 'triage <bot> @everyone',
  resource_type: 'finding',
  resource_display_name: 'Finding & co',
  payload: { severity: 'critical', score: 0.9 },
  created_at: '2026-02-03T04:05:06.789Z',
});

describe('destination presets', () => {
  it('has exactly one preset per allowed destination, with valid header and variable names', () => {
    expect(DESTINATION_PRESETS.map((p) => p.id)).toEqual([...DESTINATIONS]);
    for (const preset of DESTINATION_PRESETS) {
      for (const h of preset.headers) expect(h).toMatch(/^[A-Za-z0-9-]+$/);
      for (const v of preset.vars) expect(v).toMatch(/^[A-Za-z_][A-Za-z0-9_]*$/);
      if (['slack', 'teams', 'discord', 'pagerduty', 'opsgenie'].includes(preset.id))
        expect(preset).toMatchObject({ format: 'single', max_events: 1 });
      else if (preset.id !== 'generic') expect(preset.max_events).toBe(100);
    }
  });

  it.each(DESTINATION_PRESETS.map((p) => [p.id, p] as const))(
    '%s renders the sample event into the body its receiver documents',
    (id, preset) => {
      const vars = Object.fromEntries(preset.vars.map((v) => [v, 'R0UT1NG']));
      const { bodies } = previewBodies(orgId, {
        template: preset.template,
        format: preset.format,
        max_events: preset.max_events,
        vars,
      });
      expect(bodies).toHaveLength(1);
      expect(bodies[0]!.content_type).toBe(receivers[id].contentType);
      receivers[id].check(bodies[0]!.body);
    },
  );

  it.each(DESTINATION_PRESETS.map((p) => [p.id, p] as const))(
    '%s batches several events as its receiver accepts them',
    (id, preset) => {
      const vars = Object.fromEntries(preset.vars.map((v) => [v, 'R0UT1NG']));
      const { bodies } = previewBodies(orgId, {
        template: preset.template,
        format: preset.format,
        max_events: preset.max_events,
        vars,
        events: [event(1), event(2), event(3)],
      });
      expect(bodies).toHaveLength(preset.format === 'single' ? 3 : 1);
      for (const body of bodies) receivers[id].check(body.body);
    },
  );

  it('escapes markup in chat text and maps a critical finding to a critical PagerDuty event', () => {
    const preset = (id: string) => DESTINATION_PRESETS.find((p) => p.id === id)!;
    const slackBody = previewBodies(orgId, { ...preset('slack'), vars: {}, events: [event(1)] }).bodies[0]!.body;
    expect(JSON.parse(slackBody).text).toBe(
      'Anomaly Finding Created: Finding &amp; co by triage &lt;bot&gt; @everyone',
    );
    const pd = previewBodies(orgId, { ...preset('pagerduty'), vars: { routing_key: 'R0UT1NG' }, events: [event(1)] })
      .bodies[0]!.body;
    expect(JSON.parse(pd).payload.severity).toBe('critical');
  });
});

describe('the sentinel preset (CONTRACT 20)', () => {
  it("carries OAuth 2.0 client credentials against Entra's token URL with Azure Monitor's scope, and no Authorization header", () => {
    const sentinelPreset = DESTINATION_PRESETS.find((p) => p.id === 'sentinel')!;
    expect(sentinelPreset.auth).toEqual({
      type: 'oauth2_client_credentials',
      token_url: 'https://login.microsoftonline.com/{tenant}/oauth2/v2.0/token',
      scope: 'https://monitor.azure.com//.default',
      client_auth: 'body',
    });
    expect(sentinelPreset.headers.map((h) => h.toLowerCase())).not.toContain('authorization');
    expect(DESTINATION_PRESETS.filter((p) => p.auth !== null).map((p) => p.id)).toEqual(['sentinel']);
  });
});
