/** A copy of a JSON schema without `$id`s: Ajv refuses one `$id` twice in a schema (SecurityGroupCreate holds Rule twice). */
export function withoutIds(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(withoutIds);
  if (typeof schema !== 'object' || schema === null) return schema;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(schema)) if (k !== '$id') out[k] = withoutIds(v);
  return out;
}
