import type { DESTINATIONS, WEBHOOK_FORMATS } from '@gatehook/core/webhook-schema';

/**
 * A destination preset (CONTRACT 12, SPEC 6.3.7): the template, format and batching a receiver accepts, and the
 * names of the variables and headers its credentials go in. Applying one is the client's choice; the webhook
 * stores the explicit values and `destination` stays a label.
 */
export interface DestinationPreset {
  id: (typeof DESTINATIONS)[number];
  label: string;
  format: (typeof WEBHOOK_FORMATS)[number];
  max_events: number;
  template: string;
  vars: string[];
  headers: string[];
  /**
   * The OAuth 2.0 authentication its receiver takes (CONTRACT 20), without the secret and with `{tenant}` where the
   * client puts its own value; null when it takes none.
   */
  auth: PresetAuth | null;
}

/** A preset's `auth`: the webhook's `auth` less the client id and secret, which the client supplies. */
export interface PresetAuth {
  type: 'oauth2_client_credentials';
  token_url: string;
  scope: string;
  client_auth: 'body';
}

/** Entra ID's token endpoint (v2.0); `{tenant}` is the directory (tenant) id. */
export const ENTRA_TOKEN_URL = 'https://login.microsoftonline.com/{tenant}/oauth2/v2.0/token';
/** The scope of an Entra token for Azure Monitor's Logs Ingestion API (the double slash is Azure's). */
export const AZURE_MONITOR_SCOPE = 'https://monitor.azure.com//.default';

// One line of text that chat receivers show: "Anomaly Finding Created: <resource> by <actor>". Display names are
// escaped because Slack and Teams re-parse &, < and > as markup.
const chatLine = '(printf "%s: %s by %s" .String (escape .ResourceDisplayName) (escape .ActorDisplayName))';

// The event as a flat log record, for log and SIEM receivers.
const logRecord = [
  '"id": {{ json .ID }}',
  '"action": {{ json .Action }}',
  '"title": {{ json .String }}',
  '"actor": {"type": {{ json .ActorType }}, "id": {{ json .ActorID }}, "name": {{ json .ActorDisplayName }}}',
  '"resource": {"type": {{ json .ResourceType }}, "id": {{ json .ResourceID }}, "name": {{ json .ResourceDisplayName }}}',
  '"resources": {{ json .Resources }}',
  '"context": {{ json .Context }}',
  '"changes": {{ json .Changes }}',
  '"payload": {{ json .Payload }}',
  '"created_at": {{ json .CreatedAt }}',
].join(', ');

const PRESETS: readonly (Omit<DestinationPreset, 'auth'> & { auth?: PresetAuth })[] = [
  {
    // The Standard Webhooks envelope, unchanged: for any HTTPS endpoint that verifies the signature itself.
    id: 'generic',
    label: 'Generic HTTPS',
    format: 'single',
    max_events: 1,
    template: '',
    vars: [],
    headers: [],
  },
  {
    // Slack incoming webhook: {"text": "..."}; the URL carries the credential.
    id: 'slack',
    label: 'Slack',
    format: 'single',
    max_events: 1,
    vars: [],
    headers: [],
    template: `{"text": {{ json ${chatLine} }}}`,
  },
  {
    // Teams via a Workflows "post to a channel when a webhook request is received" URL: a message with one
    // Adaptive Card attachment.
    id: 'teams',
    label: 'Microsoft Teams',
    format: 'single',
    max_events: 1,
    vars: [],
    headers: [],
    template:
      '{"type": "message", "attachments": [{"contentType": "application/vnd.microsoft.card.adaptive", "contentUrl": null, ' +
      '"content": {"$schema": "http://adaptivecards.io/schemas/adaptive-card.json", "type": "AdaptiveCard", "version": "1.4", "body": [' +
      '{"type": "TextBlock", "weight": "Bolder", "wrap": true, "text": {{ json .String }}}, ' +
      `{"type": "TextBlock", "wrap": true, "text": {{ json ${chatLine} }}}` +
      ']}}]}',
  },
  {
    // Discord webhook: {"content"} of at most 2000 characters; mentions are never parsed from event text.
    id: 'discord',
    label: 'Discord',
    format: 'single',
    max_events: 1,
    vars: [],
    headers: [],
    template: `{"content": {{ json ${chatLine} }}, "allowed_mentions": {"parse": []}}`,
  },
  {
    // PagerDuty Events API v2 (https://events.pagerduty.com/v2/enqueue): the integration's routing key is a
    // variable; dedup_key is the event id so a redelivery does not open a second incident.
    id: 'pagerduty',
    label: 'PagerDuty',
    format: 'single',
    max_events: 1,
    vars: ['routing_key'],
    headers: [],
    template:
      '{"routing_key": {{ json .Vars.routing_key }}, "event_action": "trigger", "dedup_key": {{ json .ID }}, ' +
      `"payload": {"summary": {{ json ${chatLine} }}, "source": "gatehook", ` +
      '"severity": {{ if eq (print .Payload.severity) "critical" }}"critical"{{ else }}"warning"{{ end }}, ' +
      '"timestamp": {{ json .CreatedAt }}, "component": {{ json .ResourceType }}, "class": {{ json .Action }}, ' +
      '"custom_details": {"actor": {{ json .ActorDisplayName }}, "resource": {{ json .ResourceDisplayName }}, "payload": {{ json .Payload }}}}}',
  },
  {
    // Opsgenie Alert API (POST /v2/alerts): the API key goes in `Authorization: GenieKey <key>`; the message is
    // the action's title (Opsgenie truncates past 130 characters), alias deduplicates.
    id: 'opsgenie',
    label: 'Opsgenie',
    format: 'single',
    max_events: 1,
    vars: [],
    headers: ['Authorization'],
    template:
      '{"message": {{ json .String }}, "alias": {{ json .ID }}, ' +
      `"description": {{ json ${chatLine} }}, "source": "gatehook", "priority": "P3", ` +
      '"details": {"action": {{ json .Action }}, "actor": {{ json .ActorDisplayName }}, "resource": {{ json .ResourceDisplayName }}, "created_at": {{ json .CreatedAt }}}}',
  },
  {
    // Datadog Logs API v2 (POST /api/v2/logs, header DD-API-KEY): a JSON array of log objects.
    id: 'datadog',
    label: 'Datadog Logs',
    format: 'array',
    max_events: 100,
    vars: [],
    headers: ['DD-API-KEY'],
    template: `{"ddsource": "gatehook", "service": "gatehook", "ddtags": {{ json (printf "action:%s" .Action) }}, "message": {{ json ${chatLine} }}, ${logRecord}}`,
  },
  {
    // Splunk HTTP Event Collector (POST /services/collector/event, `Authorization: Splunk <token>`): event
    // objects one after another; `time` is epoch seconds.
    id: 'splunk',
    label: 'Splunk HEC',
    format: 'ndjson',
    max_events: 100,
    vars: [],
    headers: ['Authorization'],
    template: `{"time": {{ epoch .CreatedAt }}, "source": "gatehook", "sourcetype": "gatehook:audit", "event": {${logRecord}}}`,
  },
  {
    // Elastic Agent's Custom HTTP Endpoint Logs input (newline-delimited JSON documents), with the API key in
    // `Authorization`. Elasticsearch's own _bulk needs an action line before each document, which one rendered
    // JSON value per event cannot give (docs/console.md).
    id: 'elastic',
    label: 'Elastic',
    format: 'ndjson',
    max_events: 100,
    vars: [],
    headers: ['Authorization'],
    template: `{"@timestamp": {{ json .CreatedAt }}, "event": {"action": {{ json .Action }}, "id": {{ json .ID }}, "kind": "event"}, "message": {{ json ${chatLine} }}, "gatehook": {${logRecord}}}`,
  },
  {
    // Sumo Logic HTTP Logs source: one JSON log per line; the source URL carries the credential.
    id: 'sumo_logic',
    label: 'Sumo Logic',
    format: 'ndjson',
    max_events: 100,
    vars: [],
    headers: [],
    template: `{"timestamp": {{ json .CreatedAt }}, "message": {{ json ${chatLine} }}, ${logRecord}}`,
  },
  {
    // Microsoft Sentinel through the Logs Ingestion API (data collection endpoint, rule and stream in the URL): a
    // JSON array of records with TimeGenerated. It takes only Entra access tokens, which live about an hour: the
    // service obtains and renews them with the app registration's client id and secret (client credentials).
    id: 'sentinel',
    label: 'Microsoft Sentinel',
    format: 'array',
    max_events: 100,
    vars: [],
    headers: [],
    auth: {
      type: 'oauth2_client_credentials',
      token_url: ENTRA_TOKEN_URL,
      scope: AZURE_MONITOR_SCOPE,
      client_auth: 'body',
    },
    template:
      '{"TimeGenerated": {{ json .CreatedAt }}, "Action": {{ json .Action }}, "EventId": {{ json .ID }}, ' +
      '"ActorType": {{ json .ActorType }}, "ActorId": {{ json .ActorID }}, "ActorName": {{ json .ActorDisplayName }}, ' +
      '"ResourceType": {{ json .ResourceType }}, "ResourceId": {{ json .ResourceID }}, "ResourceName": {{ json .ResourceDisplayName }}, ' +
      '"Context": {{ json .Context }}, "Payload": {{ json .Payload }}, "Changes": {{ json .Changes }}}',
  },
  {
    // Google Security Operations (Chronicle) webhook feed: newline-separated JSON logs, authenticated by the
    // X-goog-api-key and X-Webhook-Access-Key headers.
    id: 'chronicle',
    label: 'Google Chronicle',
    format: 'ndjson',
    max_events: 100,
    vars: [],
    headers: ['X-goog-api-key', 'X-Webhook-Access-Key'],
    template: `{"event_time": {{ json .CreatedAt }}, "product": "gatehook", ${logRecord}}`,
  },
];

/** Every allowed `destination` value's preset, in the order of CONTRACT 4. */
export const DESTINATION_PRESETS: readonly DestinationPreset[] = PRESETS.map((preset) => ({
  ...preset,
  auth: preset.auth ?? null,
}));
