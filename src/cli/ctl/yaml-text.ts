import { createRequire } from 'node:module';
import type * as Yaml from 'yaml';

let yaml: typeof Yaml | undefined;

/**
 * YAML of a plain JSON value, lines never folded. The yaml package is
 * required on first use: loading it costs every ctl process about a tenth of
 * a second of start-up, and only `-o yaml` and `describe` print YAML.
 */
export function toYaml(value: unknown): string {
  yaml ??= createRequire(import.meta.url)('yaml') as typeof Yaml;
  return yaml.stringify(value, { lineWidth: 0 });
}
