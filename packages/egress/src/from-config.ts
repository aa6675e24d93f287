import { readFileSync } from 'node:fs';
import type { Config } from '@gatehook/core/config';
import { USER_AGENT } from '@gatehook/core/version';
import { parseCidrList } from './address-policy';
import { createEgressClient, type EgressClientOptions } from './client';

/** The egress client as configured by the environment (allow list, extra CA, proxy, timeout, sockets per origin). */
export function egressClientFromConfig(
  config: Config,
  hooks: Pick<EgressClientOptions, 'onTokenFetch'> = {},
): ReturnType<typeof createEgressClient> {
  return createEgressClient({
    ...hooks,
    allow: parseCidrList(config.EGRESS_ALLOW_CIDRS),
    ...(config.EGRESS_EXTRA_CA_FILE ? { extraCaPem: readFileSync(config.EGRESS_EXTRA_CA_FILE, 'utf8') } : {}),
    ...(config.EGRESS_PROXY_URL ? { proxyUrl: config.EGRESS_PROXY_URL } : {}),
    timeoutMs: config.DELIVERY_TIMEOUT_MS,
    userAgent: USER_AGENT,
    // An origin never has more requests in flight than its optional ceiling, nor than the process's slots.
    maxSocketsPerOrigin:
      config.DELIVERY_ORIGIN_CONCURRENCY > 0
        ? Math.min(config.DELIVERY_ORIGIN_CONCURRENCY, config.DELIVERY_CONCURRENCY)
        : config.DELIVERY_CONCURRENCY,
  });
}
