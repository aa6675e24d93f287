import type { Config } from './config';
import { createLogger, type Logger } from './logger';
import { startTracing, type Tracing } from './tracing';

/** What every service process starts with, before its own parts. */
export interface BootedService {
  config: Config;
  logger: Logger;
  tracing: Tracing;
}

/**
 * The prologue of the API and the worker: the configuration (a ConfigError stops start-up before anything else),
 * the process's logger with the configuration's start-up warnings, and tracing when the configuration asks for it.
 */
export async function bootService(name: string, loadConfig: () => Config): Promise<BootedService> {
  const config = loadConfig();
  const logger = createLogger({ name, level: config.LOG_LEVEL });
  for (const warning of config.startupWarnings) logger.warn(warning);
  const tracing = await startTracing(config, name, logger);
  if (tracing.enabled) logger.info({ traces: tracing.target }, 'exporting traces');
  return { config, logger, tracing };
}
