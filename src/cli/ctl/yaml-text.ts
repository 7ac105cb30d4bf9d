import { stringify } from 'yaml';

/** YAML of a plain JSON value, lines never folded. */
export function toYaml(value: unknown): string {
  return stringify(value, { lineWidth: 0 });
}
