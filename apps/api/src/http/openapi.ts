import { z } from 'zod';
import type { AnyRoute } from './route';

function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  const out = z.toJSONSchema(schema, { io, target: 'draft-2020-12', unrepresentable: 'any' }) as Record<
    string,
    unknown
  >;
  delete out.$schema;
  return out;
}

function parameters(schema: z.ZodType | undefined, where: 'path' | 'query'): Record<string, unknown>[] {
  if (!(schema instanceof z.ZodObject)) return [];
  return Object.entries(schema.shape as Record<string, z.ZodType>).map(([name, field]) => ({
    name,
    in: where,
    required: where === 'path' || !field.safeParse(undefined).success,
    schema: jsonSchema(field, 'input'),
  }));
}

/** The OpenAPI 3.1 document of every mounted route, generated from the zod schemas that validate them. */
export function buildOpenApi(routes: readonly AnyRoute[], version: string): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const operation: Record<string, unknown> = {
      operationId: route.operationId,
      summary: route.summary,
      tags: [route.tag],
      security: route.access.kind === 'public' ? [] : [{ apiKey: [] }],
      parameters: [...parameters(route.params, 'path'), ...parameters(route.query, 'query')],
      responses: Object.fromEntries(
        Object.entries(route.responses).map(([status, response]) => [
          status,
          {
            description: response.description,
            ...(response.schema
              ? { content: { 'application/json': { schema: jsonSchema(response.schema, 'output') } } }
              : {}),
          },
        ]),
      ),
    };
    if (route.access.kind === 'permission') operation['x-permission'] = route.access.permission;
    if (route.access.kind === 'admin') operation['x-role'] = 'admin';
    const body = route.bodyDoc ?? route.body;
    if (body) {
      operation.requestBody = {
        required: true,
        content: { 'application/json': { schema: jsonSchema(body, 'input') } },
      };
    }
    (paths[route.path] ??= {})[route.method] = operation;
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Gatehook API',
      version,
      description:
        'Webhook delivery of audit events and rate limit rules. Errors: {"error":{"code","message","details"}}.',
    },
    components: {
      securitySchemes: {
        apiKey: { type: 'http', scheme: 'bearer', description: 'An API key: ghk_ followed by 43 characters' },
      },
    },
    paths,
  };
}
