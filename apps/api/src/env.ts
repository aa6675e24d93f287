import { parseConfig, type Config } from '@gatehook/core/config';

/** The API's configuration: the one place that reads process.env. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  return parseConfig(env);
}
