import { z } from 'zod';
import { isKnownAction } from './event-catalogue';

export const WEBHOOK_FORMATS = ['single', 'array', 'ndjson'] as const;
export const WEBHOOK_STATUSES = ['active', 'paused', 'disabled'] as const;
export const DISABLED_REASONS = ['gone', 'circuit_breaker', 'template_error', 'manual'] as const;
export const DESTINATIONS = [
  'generic',
  'slack',
  'teams',
  'discord',
  'pagerduty',
  'opsgenie',
  'datadog',
  'splunk',
  'elastic',
  'sumo_logic',
  'sentinel',
  'chronicle',
] as const;

/** Headers the delivery owns; a webhook's custom headers can never set them (CONTRACT section 4). */
export const RESERVED_HEADERS: ReadonlySet<string> = new Set([
  'content-type',
  'content-length',
  'host',
  'user-agent',
  'webhook-id',
  'webhook-timestamp',
  'webhook-signature',
  'transfer-encoding',
  'connection',
]);

/** Length limits where SPEC.md says "not shown"; recorded in docs/webhooks.md. */
export const WEBHOOK_LIMITS = {
  nameLength: 200,
  urlLength: 2048,
  events: 200,
  conditionLength: 1024,
  templateLength: 65_536,
  vars: 50,
  varNameLength: 64,
  varValueLength: 4096,
  headers: 50,
  headerNameLength: 128,
  headerValueLength: 4096,
  clientCertificateLength: 65_536,
  clientKeyLength: 16_384,
  rateLimitPerSecond: 10_000,
  authUrlLength: 2048,
  authTextLength: 1024,
  authSecretLength: 4096,
  authKeyLength: 16_384,
} as const;

/** The kinds of destination authentication (CONTRACT 20). */
export const WEBHOOK_AUTH_TYPES = ['oauth2_client_credentials', 'oauth2_jwt_bearer'] as const;
/** How a client secret is presented to the token endpoint: in the form body or as HTTP Basic. */
export const CLIENT_AUTH_METHODS = ['body', 'basic'] as const;

// RFC 9110 token characters.
const HTTP_TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const VAR_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

const name = z
  .string()
  .trim()
  .min(1, 'name must not be blank')
  .max(WEBHOOK_LIMITS.nameLength, `name must be at most ${WEBHOOK_LIMITS.nameLength} characters`);

const events = z
  .array(z.string(), { error: 'events must be an array of action names' })
  .min(1, 'events must name at least one action, or *')
  .max(WEBHOOK_LIMITS.events, `events may name at most ${WEBHOOK_LIMITS.events} actions`)
  .superRefine((list, ctx) => {
    const seen = new Set<string>();
    list.forEach((action, index) => {
      if (action === '*') {
        if (list.length > 1) ctx.addIssue({ code: 'custom', path: [index], message: '* must be the only entry' });
      } else if (!isKnownAction(action)) {
        ctx.addIssue({ code: 'custom', path: [index], message: `unknown action "${action}" (see GET /event-types)` });
      }
      if (seen.has(action)) ctx.addIssue({ code: 'custom', path: [index], message: `duplicate action "${action}"` });
      seen.add(action);
    });
  });

const condition = z
  .string()
  .max(WEBHOOK_LIMITS.conditionLength, `condition must be at most ${WEBHOOK_LIMITS.conditionLength} characters`);
const template = z
  .string()
  .max(WEBHOOK_LIMITS.templateLength, `template must be at most ${WEBHOOK_LIMITS.templateLength} characters`);
const destination = z.enum(DESTINATIONS).nullable();
const format = z.enum(WEBHOOK_FORMATS);
const maxEvents = z
  .number()
  .int('max_events must be an integer')
  .min(1, 'max_events must be 1 to 100')
  .max(100, 'max_events must be 1 to 100');

const vars = z.record(z.string(), z.string({ error: 'variable values must be strings' })).superRefine((map, ctx) => {
  const names = Object.keys(map);
  if (names.length > WEBHOOK_LIMITS.vars)
    ctx.addIssue({ code: 'custom', message: `at most ${WEBHOOK_LIMITS.vars} variables` });
  for (const key of names) {
    if (!VAR_NAME.test(key) || key.length > WEBHOOK_LIMITS.varNameLength) {
      ctx.addIssue({
        code: 'custom',
        path: [key],
        message: 'variable names are letters, digits and _, not starting with a digit, at most 64 characters',
      });
    }
    if ((map[key] ?? '').length > WEBHOOK_LIMITS.varValueLength) {
      ctx.addIssue({
        code: 'custom',
        path: [key],
        message: `variable values are at most ${WEBHOOK_LIMITS.varValueLength} characters`,
      });
    }
  }
});

/**
 * Node's own rule for a header value (`http.validateHeaderValue`): tab, visible ASCII, space and U+0080 to U+00FF.
 * Anything else (CR, LF, NUL, other control characters, a character past U+00FF) makes every request fail with
 * ERR_INVALID_CHAR before it leaves, so it is refused at save. Written out here because the console shares this
 * schema in the browser; the test holds it to Node's function for every UTF-16 unit.
 */
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
const HEADER_VALUE_RULE =
  'header values may contain only tab, space, visible ASCII and characters up to U+00FF (no CR, LF, NUL or other control characters)';

const headers = z.record(z.string(), z.string({ error: 'header values must be strings' })).superRefine((map, ctx) => {
  const names = Object.keys(map);
  if (names.length > WEBHOOK_LIMITS.headers)
    ctx.addIssue({ code: 'custom', message: `at most ${WEBHOOK_LIMITS.headers} headers` });
  const lower = new Set<string>();
  for (const key of names) {
    const value = map[key] ?? '';
    if (!HTTP_TOKEN.test(key) || key.length > WEBHOOK_LIMITS.headerNameLength) {
      ctx.addIssue({ code: 'custom', path: [key], message: 'header name is not a valid HTTP token' });
    } else if (RESERVED_HEADERS.has(key.toLowerCase())) {
      ctx.addIssue({ code: 'custom', path: [key], message: `header "${key}" is reserved and cannot be set` });
    } else if (lower.has(key.toLowerCase())) {
      ctx.addIssue({
        code: 'custom',
        path: [key],
        message: 'header names are case-insensitive; this one is given twice',
      });
    }
    lower.add(key.toLowerCase());
    // The value is never echoed: it may be a credential.
    if (!HEADER_VALUE.test(value)) ctx.addIssue({ code: 'custom', path: [key], message: HEADER_VALUE_RULE });
    if (value.length > WEBHOOK_LIMITS.headerValueLength) {
      ctx.addIssue({
        code: 'custom',
        path: [key],
        message: `header values are at most ${WEBHOOK_LIMITS.headerValueLength} characters`,
      });
    }
  }
});

/** mTLS: PEMs of a client certificate (leaf first, intermediates after) and its unencrypted key; write-only. */
const clientCertificate = z
  .strictObject(
    {
      cert: z
        .string()
        .min(1, 'cert is required')
        .max(
          WEBHOOK_LIMITS.clientCertificateLength,
          `cert must be at most ${WEBHOOK_LIMITS.clientCertificateLength} characters`,
        ),
      key: z
        .string()
        .min(1, 'key is required')
        .max(WEBHOOK_LIMITS.clientKeyLength, `key must be at most ${WEBHOOK_LIMITS.clientKeyLength} characters`),
    },
    { error: 'client_certificate must be {"cert": PEM, "key": PEM} or null' },
  )
  .nullable();

const rateLimitPerSecond = z
  .number({ error: 'rate_limit_per_second must be a number or null' })
  .int('rate_limit_per_second must be an integer')
  .min(1, `rate_limit_per_second must be 1 to ${WEBHOOK_LIMITS.rateLimitPerSecond}, or null for none`)
  .max(
    WEBHOOK_LIMITS.rateLimitPerSecond,
    `rate_limit_per_second must be 1 to ${WEBHOOK_LIMITS.rateLimitPerSecond}, or null for none`,
  )
  .nullable();

const authText = (field: string, max: number = WEBHOOK_LIMITS.authTextLength) =>
  z.string({ error: `${field} must be a string` }).max(max, `${field} must be at most ${max} characters`);
const authOptional = (field: string, max?: number) =>
  authText(field, max)
    .nullish()
    .transform((v) => (v === undefined || v === '' ? null : v));
const tokenUrl = authText('token_url', WEBHOOK_LIMITS.authUrlLength)
  .min(1, 'token_url is required')
  .refine((value) => URL.canParse(value) && new URL(value).protocol === 'https:', 'token_url must be an https URL');
// Write-only secrets: blank (or absent) keeps the stored one on PATCH; values never appear in a message.
const authSecret = (field: string, max: number) =>
  authText(field, max)
    .nullish()
    .transform((v) => v ?? '');

/**
 * OAuth 2.0 client credentials grant (RFC 6749 4.4): a client secret (form body or HTTP Basic) or a private key that
 * signs an RFC 7523 client assertion (`private_key_jwt`).
 */
const clientCredentialsAuth = z
  .strictObject({
    type: z.literal('oauth2_client_credentials'),
    token_url: tokenUrl,
    client_id: authText('client_id').trim().min(1, 'client_id is required'),
    client_secret: authSecret('client_secret', WEBHOOK_LIMITS.authSecretLength),
    private_key: authSecret('private_key', WEBHOOK_LIMITS.authKeyLength),
    key_id: authOptional('key_id'),
    client_auth: z
      .enum(CLIENT_AUTH_METHODS, { error: 'client_auth must be body or basic' })
      .nullish()
      .transform((v) => v ?? 'body'),
    scope: authOptional('scope'),
    audience: authOptional('audience'),
  })
  .superRefine((auth, ctx) => {
    if (auth.client_secret !== '' && auth.private_key !== '') {
      ctx.addIssue({ code: 'custom', message: 'give either client_secret or private_key, not both' });
    }
    if (auth.client_auth === 'basic' && auth.private_key !== '') {
      ctx.addIssue({
        code: 'custom',
        path: ['client_auth'],
        message: 'client_auth applies to client_secret only; a private_key signs a client assertion',
      });
    }
  });

/** RFC 7523 JWT-bearer grant: a signed assertion is the grant itself (as Google service accounts use). */
const jwtBearerAuth = z.strictObject({
  type: z.literal('oauth2_jwt_bearer'),
  token_url: tokenUrl,
  issuer: authText('issuer').trim().min(1, 'issuer is required'),
  private_key: authSecret('private_key', WEBHOOK_LIMITS.authKeyLength),
  key_id: authOptional('key_id'),
  subject: authOptional('subject'),
  scope: authOptional('scope'),
  audience: authOptional('audience'),
});

/** A webhook's `auth` (CONTRACT 20): null for none. Secrets are checked for presence and key type by the service. */
const webhookAuth = z
  .discriminatedUnion('type', [clientCredentialsAuth, jwtBearerAuth], {
    error: 'auth must be null or an object whose type is oauth2_client_credentials or oauth2_jwt_bearer',
  })
  .nullable();
export type WebhookAuthInput = NonNullable<z.output<typeof webhookAuth>>;

/** `auth` as the API returns it: every field but the secrets, and the stored secret's name with "" as its value. */
export const webhookAuthViewSchema = z
  .object({
    type: z.enum(WEBHOOK_AUTH_TYPES),
    token_url: z.string(),
    client_id: z.string().optional(),
    client_auth: z.enum(CLIENT_AUTH_METHODS).optional(),
    issuer: z.string().optional(),
    subject: z.string().nullable().optional(),
    key_id: z.string().nullable(),
    scope: z.string().nullable(),
    audience: z.string().nullable(),
    client_secret: z
      .literal('')
      .optional()
      .describe('present when a client secret is stored; its value is never returned'),
    private_key: z.literal('').optional().describe('present when a private key is stored; its value is never returned'),
  })
  .nullable()
  .describe('OAuth 2.0 destination authentication (CONTRACT 20); secrets are never returned');
export type WebhookAuthView = z.output<typeof webhookAuthViewSchema>;

const url = z
  .string({ error: 'url must be a string' })
  .max(WEBHOOK_LIMITS.urlLength, `url must be at most ${WEBHOOK_LIMITS.urlLength} characters`);

/** Body of POST /webhooks. The URL's address policy and the condition/template checks run after this. */
export const createWebhookSchema = z.strictObject({
  name,
  url: url.min(1, 'url is required'),
  events,
  condition: condition.default(''),
  destination: destination.default(null),
  format: format.default('single'),
  max_events: maxEvents.default(1),
  template: template.default(''),
  vars: vars.default({}),
  headers: headers.default({}),
  client_certificate: clientCertificate.default(null),
  rate_limit_per_second: rateLimitPerSecond.default(null),
  auth: webhookAuth.default(null),
});
export type CreateWebhookInput = z.output<typeof createWebhookSchema>;

/** Body of PATCH /webhooks/{id}: only fields present change; a blank url keeps the stored one. */
export const patchWebhookSchema = z.strictObject({
  name: name.optional(),
  url: url.optional(),
  events: events.optional(),
  condition: condition.optional(),
  destination: destination.optional(),
  format: format.optional(),
  max_events: maxEvents.optional(),
  template: template.optional(),
  vars: vars.optional(),
  headers: headers.optional(),
  /** null removes it; absent keeps it. */
  client_certificate: clientCertificate.optional(),
  rate_limit_per_second: rateLimitPerSecond.optional(),
  /**
   * null removes it; absent keeps it; an object replaces it (a blank secret keeps the stored one when type is
   * unchanged).
   */
  auth: webhookAuth.optional(),
});
export type PatchWebhookInput = z.output<typeof patchWebhookSchema>;

/** A webhook as the API returns it: never a URL, header value, var value or secret in clear. */
export const webhookSchema = z.object({
  id: z.uuid(),
  org_id: z.uuid(),
  name: z.string(),
  url: z.string().describe('origin plus the last four characters of the URL'),
  events: z.array(z.string()),
  condition: z.string(),
  destination: destination,
  format,
  max_events: z.number().int(),
  template: z.string(),
  vars: z.record(z.string(), z.literal('')).describe('variable names; values are never returned'),
  headers: z.record(z.string(), z.literal('')).describe('header names; values are never returned'),
  status: z.enum(WEBHOOK_STATUSES),
  disabled_reason: z.enum(DISABLED_REASONS).nullable(),
  failing_since: z.iso.datetime().nullable(),
  client_certificate: z
    .object({ fingerprint_sha256: z.string(), not_after: z.iso.datetime() })
    .nullable()
    .describe('the client certificate presented on mTLS, by fingerprint and expiry; the PEMs are never returned'),
  rate_limit_per_second: z.number().int().nullable(),
  auth: webhookAuthViewSchema,
  created_at: z.iso.datetime(),
  updated_at: z.iso.datetime(),
});
export type WebhookView = z.output<typeof webhookSchema>;

/** SPEC 2.3: the answer of `POST /webhooks/{id}/test` (the API's test send and the console both use it). */
export interface TestResult {
  success: boolean;
  status_code?: number;
  error?: string;
  duration_ms: number;
  response_snippet?: string;
}
