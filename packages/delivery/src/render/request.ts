import { USER_AGENT } from '@gatehook/core/version';
import type { SendRequest, SendResult } from '@gatehook/egress/client';
import type { ClientCertificate } from '@gatehook/egress/client-certificate';
import type { DestinationAuth } from '@gatehook/egress/oauth/token-request';
import { deliveryHeaders } from './signing';
import type { LiveWebhook } from '../webhook-configs';

/** Sends one signed request; the egress client in production. */
export type Sender = (request: SendRequest & { body: string }) => Promise<SendResult>;

/** A signed request, ready to send: everything the attempt needs, computed without I/O. */
export interface PreparedRequest {
  url: string;
  origin: string;
  body: string;
  headers: Record<string, string>;
  /** The webhook's client certificate, presented when the receiver asks (mTLS). */
  clientCertificate: ClientCertificate | null;
  /** OAuth 2.0 destination authentication: the egress client adds the access token (CONTRACT 20). */
  auth: DestinationAuth | null;
}

/**
 * Signs a body for a webhook as every request to it is signed (SPEC 5; CONTRACT 4): the message id, a fresh
 * `webhook-timestamp`, the current secret and, during a rotation overlap, the previous one (newest first), the
 * webhook's custom headers. Deliveries and test sends both go through here, so a change to signing or to secret
 * rotation is made once.
 */
export function signedRequest(
  webhook: LiveWebhook,
  message: { id: string; body: string; contentType: string },
  now: Date,
): PreparedRequest {
  const secrets = [webhook.secret];
  if (webhook.previousSecret && webhook.previousSecretValidUntil && webhook.previousSecretValidUntil > now)
    secrets.push(webhook.previousSecret);
  const headers = deliveryHeaders({
    deliveryId: message.id,
    timestampSeconds: Math.floor(now.getTime() / 1000),
    body: message.body,
    secrets,
    contentType: message.contentType,
    userAgent: USER_AGENT,
    custom: webhook.headers,
  });
  return {
    url: webhook.url,
    origin: webhook.origin,
    body: message.body,
    headers,
    clientCertificate: webhook.clientCertificate,
    auth: webhook.destinationAuth,
  };
}
