import { parse } from '@marcbachmann/cel-js';
import { costIssues, payloadFieldsNamed } from './condition-ast';

describe('payloadFieldsNamed', () => {
  it.each<[string, string[]]>([
    ['event.payload.severity == "high"', ['severity']],
    ['has(event.payload.score) && event.payload.score > 1', ['score']],
    ['event.payload["detector"] == "x" || event["payload"].subject == "y"', ['detector', 'subject']],
    ['event.payload.call.tool_key == "x"', ['call']],
    ['event.changes.exists(c, c.field == event.payload.severity)', ['severity']],
    ['[1].exists(event, event.payload.x == 1)', []],
    ['event.context.payload.severity == "x" || payload.severity == "x"', []],
    ['event.action == "x"', []],
  ])('%s', (expression, fields) => {
    expect(payloadFieldsNamed(parse(expression).ast)).toEqual(fields);
  });
});

describe('costIssues', () => {
  it.each<[string, number]>([
    ['event.changes.exists(c, c.x == 1)', 0],
    ['a.all(x, b.exists(y, x == y))', 0],
    ['a.all(x, b.exists(y, c.map(z, z)))', 1],
    ['a.map(x, x).map(y, y).filter(z, z)', 0],
    ['a.exists(x, x.map(y, y.filter(z, z)))', 1],
    ['cel.bind(x, 1, x)', 1],
  ])('%s', (expression, count) => {
    expect(costIssues(parse(expression).ast)).toHaveLength(count);
  });
});
