import { ConditionCache } from '@gatehook/conditions/event-condition';
import type { SecretBox } from '@gatehook/core/encryption';
import { envelopeRenderer, type EventRenderer } from './deliveries';
import type { ConditionMatcher } from './fanout';
import { renderWithTemplate, TemplateCache } from './payload-template';

/**
 * Renderers per fan-out pass: the webhook's payload template when it has one (compiled once per webhook and
 * template text, its variables decrypted once per pass), else the default envelope rendered once per event.
 */
export function webhookRenderers(box: SecretBox, templates = new TemplateCache()): () => EventRenderer {
  return () => {
    const envelope = envelopeRenderer();
    const vars = new Map<string, Record<string, string>>();
    return (webhook, event) => {
      if (webhook.template.trim() === '') return envelope(webhook, event);
      let values = vars.get(webhook.id);
      if (!values) {
        values = webhook.varsEncrypted ? box.decryptMap(webhook.varsEncrypted) : {};
        vars.set(webhook.id, values);
      }
      return renderWithTemplate(templates.get(webhook.id, webhook.template), event, values);
    };
  };
}

/**
 * The condition filter of fan-out (SPEC 6.2): no condition matches everything; an evaluation error skips the
 * event; a stored condition that no longer compiles matches nothing (the cache reports it once).
 */
export function conditionMatcher(cache: ConditionCache): ConditionMatcher {
  return (webhook, event) => {
    if (webhook.condition.trim() === '') return true;
    const result = cache.get(webhook.id, webhook.condition, webhook.events).evaluate(event);
    return result.ok && result.matches;
  };
}
