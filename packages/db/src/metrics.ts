import { Counter, type Registry } from 'prom-client';
import { statementCount } from './client';

/** `gatehook_db_statements_total`: the Postgres round trips of this process (see statementCount). */
export function registerStatementMetric(registry: Registry): void {
  new Counter({
    name: 'gatehook_db_statements_total',
    help: 'Statements sent to Postgres by this process (one round trip each)',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(statementCount());
    },
  });
}
